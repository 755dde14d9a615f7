/**
 * Access tokens: compact ES256 JWTs (RFC 9068 shape, `typ: at+jwt`) that every service verifies against the
 * published JWKS with the runtime's createTokenVerifier. Lifetime 15 minutes. Tokens are returned to the
 * caller and never logged.
 */
import { randomUUID } from 'node:crypto';
import { keyVault, type Config, type Queryable } from '@agentgraph/runtime';
import { SignJWT } from 'jose';
import { activeSigningKey, SIGNING_ALG } from './keys.js';
import type { Role } from './models.js';

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;

export interface AccessTokenSubject {
  tenantId: string;
  userId: string;
  role: Role;
  scopes: readonly string[];
}

/**
 * Signs an access token for a membership the caller has already checked. `now` is injectable for tests
 * (iat = now, exp = now + 15 min).
 */
export async function issueAccessToken(
  db: Queryable,
  config: Pick<Config, 'tokenIssuer' | 'tokenAudience' | 'keyEncryptionKeys'>,
  subject: AccessTokenSubject,
  now: Date = new Date(),
): Promise<string> {
  const { kid, key } = await activeSigningKey(db, keyVault(config));
  const iat = Math.floor(now.getTime() / 1000);
  return new SignJWT({ tid: subject.tenantId, role: subject.role, scope: subject.scopes.join(' ') })
    .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: 'at+jwt' })
    .setIssuer(config.tokenIssuer)
    .setAudience(config.tokenAudience)
    .setSubject(subject.userId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ACCESS_TOKEN_TTL_SECONDS)
    .setJti(randomUUID())
    .sign(key);
}
