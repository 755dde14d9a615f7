/**
 * RFC 8693 token exchange, registered on oidc-provider's token endpoint. The desktop host trades one of its own
 * access tokens (subject_token) for a token it hands to its Python sidecar: same subject, tenant and device, scopes
 * a subset of the subject's (without a `scope` parameter: `api:read` only, so a sidecar writes only when its host asks
 * for `api:write`), role no higher than the member's current one, and a lifetime of at most 5 minutes that never
 * outlives the subject token. No refresh token is ever issued: the sidecar never holds a durable credential. Errors
 * are the RFC's: invalid_request, invalid_grant, invalid_scope, invalid_target.
 */
import { randomUUID } from 'node:crypto';
import { keyVault, roleMeet, type Config, type Queryable } from '@agentgraph/runtime';
import { SignJWT, type JWTPayload } from 'jose';
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { activeSigningKey, SIGNING_ALG } from '../keys.js';
import type { Role } from '../models.js';
import {
  API_RESOURCE,
  API_SCOPES,
  EXCHANGED_TOKEN_MAX_TTL_SECONDS,
  TOKEN_TYPE_ACCESS_TOKEN,
  TOKEN_TYPE_JWT,
} from './constants.js';
import { verifyOwnAccessToken } from './own-token.js';
import { isRevoked } from './revocation-check.js';
import { usableGrantContext } from './token-claims.js';

export const TOKEN_EXCHANGE_PARAMETERS = [
  'subject_token',
  'subject_token_type',
  'requested_token_type',
  'audience',
  'resource',
  'scope',
  'actor_token',
  'actor_token_type',
];

const ACCEPTED_TYPES = new Set([TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_JWT]);

/** What an exchange without a `scope` parameter gets: read-only. */
export const DEFAULT_EXCHANGED_SCOPE = 'api:read';

interface SubjectClaims extends JWTPayload {
  sub: string;
  exp: number;
  jti: string;
  tid: string;
  role: Role;
  scope?: string;
  client_id?: string;
  gid?: string;
  did?: string;
  act?: { sub?: string };
}

export function tokenExchangeHandler(
  db: Queryable,
  config: Pick<Config, 'tokenIssuer' | 'tokenAudience' | 'keyEncryptionKeys'>,
  now: () => Date = () => new Date(),
) {
  return async function exchange(ctx: KoaContextWithOIDC): Promise<void> {
    const params = ctx.oidc.params as Record<string, string | undefined>;
    const client = ctx.oidc.client!;
    if (!params['subject_token'])
      throw new errors.InvalidRequest('missing required parameter: subject_token');
    if (!params['subject_token_type']) {
      throw new errors.InvalidRequest('missing required parameter: subject_token_type');
    }
    if (!ACCEPTED_TYPES.has(params['subject_token_type'])) {
      throw new errors.InvalidRequest(`subject_token_type must be ${TOKEN_TYPE_ACCESS_TOKEN}`);
    }
    if (params['actor_token'] || params['actor_token_type']) {
      throw new errors.InvalidRequest('actor_token is not supported: the client itself is the actor');
    }
    const requestedType = params['requested_token_type'] ?? TOKEN_TYPE_ACCESS_TOKEN;
    if (!ACCEPTED_TYPES.has(requestedType)) {
      throw new errors.InvalidRequest(`requested_token_type must be ${TOKEN_TYPE_ACCESS_TOKEN}`);
    }
    if (params['audience'] !== undefined && params['audience'] !== config.tokenAudience) {
      throw new errors.InvalidTarget(`audience must be ${config.tokenAudience}`);
    }
    if (params['resource'] !== undefined && params['resource'] !== API_RESOURCE) {
      throw new errors.InvalidTarget(`resource must be ${API_RESOURCE}`);
    }

    const at = now();
    let subject: SubjectClaims;
    try {
      subject = await verifyOwnAccessToken<SubjectClaims>(db, config, params['subject_token'], at, [
        'sub',
        'exp',
        'jti',
        'tid',
        'role',
      ]);
    } catch {
      throw new errors.InvalidGrant('subject_token is invalid, expired or not issued by this server');
    }
    if (subject.act !== undefined) {
      throw new errors.InvalidGrant(
        'subject_token is itself an exchanged token: only the desktop host’s own access token can be exchanged',
      );
    }
    if (subject.client_id !== client.clientId) {
      throw new errors.InvalidGrant('subject_token was issued to another client');
    }
    if (await isRevoked(db, subject, at)) throw new errors.InvalidGrant('subject_token is revoked');

    const granted = await usableGrantContext(db, subject.gid);
    const subjectScopes = new Set((subject.scope ?? '').split(' ').filter(Boolean));
    // Without a scope parameter the token is read-only: a sidecar that writes must be given api:write explicitly.
    const requested = params['scope']
      ? params['scope'].split(' ').filter(Boolean)
      : [DEFAULT_EXCHANGED_SCOPE];
    const broader = requested.filter(
      (s) => !subjectScopes.has(s) || !(API_SCOPES as readonly string[]).includes(s),
    );
    if (broader.length) {
      throw new errors.InvalidScope(
        `requested scope exceeds the subject token's API scopes: ${broader.join(' ')}`,
        broader.join(' '),
      );
    }
    if (requested.length === 0) throw new errors.InvalidScope('no API scope to issue', 'api:read');

    const iat = Math.floor(at.getTime() / 1000);
    const exp = Math.min(subject.exp - 1, iat + EXCHANGED_TOKEN_MAX_TTL_SECONDS);
    if (exp <= iat) throw new errors.InvalidGrant('subject_token expires too soon to be exchanged');

    const { kid, key } = await activeSigningKey(db, keyVault(config));
    const role = roleMeet(subject.role, granted.role);
    const scope = requested.join(' ');
    const token = await new SignJWT({
      tid: subject.tid,
      role,
      scope,
      client_id: client.clientId,
      gid: subject.gid,
      ...(subject.did ? { did: subject.did } : {}),
      act: { sub: client.clientId },
    })
      .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: 'at+jwt' })
      .setIssuer(config.tokenIssuer)
      .setAudience(config.tokenAudience)
      .setSubject(subject.sub)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(key);

    ctx.set('cache-control', 'no-store');
    ctx.body = {
      access_token: token,
      issued_token_type: requestedType,
      token_type: 'Bearer',
      expires_in: exp - iat,
      scope,
    };
  };
}
