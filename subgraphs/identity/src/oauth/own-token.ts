/**
 * Verifies an access token this identity issued (token exchange's subject token, a JWT handed to revocation) against
 * the keys it publishes: ES256, `typ: at+jwt`, our issuer and audience, not expired at `at`. Throws on anything else.
 */
import type { Config, Queryable } from '@agentgraph/runtime';
import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { publishedJwks, SIGNING_ALG } from '../keys.js';

export async function verifyOwnAccessToken<T extends JWTPayload>(
  db: Queryable,
  config: Pick<Config, 'tokenIssuer' | 'tokenAudience'>,
  token: string,
  at: Date,
  requiredClaims: string[] = [],
): Promise<T> {
  const { payload } = await jwtVerify(token, createLocalJWKSet(await publishedJwks(db)), {
    issuer: config.tokenIssuer,
    audience: config.tokenAudience,
    algorithms: [SIGNING_ALG],
    typ: 'at+jwt',
    currentDate: at,
    requiredClaims,
  });
  return payload as T;
}
