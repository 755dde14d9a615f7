/**
 * Stateless access-token verification, done by every service (zero trust between gateway and subgraphs):
 * an ES256 JWT from the identity service, checked against its published JWKS (fetched and cached by jose),
 * for issuer, audience and expiry. Tokens are never logged.
 */
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { Lru } from './lru.js';
import { z } from 'zod';
import { AppError } from './errors.js';
import type { AuthContext } from './tenancy.js';

export const ACCESS_TOKEN_ALG = 'ES256';

const Claims = z.object({
  sub: z.string().min(1),
  tid: z.string().uuid(),
  role: z.enum(['OWNER', 'ADMIN', 'OPERATOR', 'VIEWER']),
  scope: z.string().default(''),
});

export interface TokenVerifierOptions {
  issuer: string;
  audience: string;
  /** JWKS URL, or a key resolver (tests, in-process identity). */
  keys: string | JWTVerifyGetKey;
  clockToleranceSeconds?: number;
  now?: () => Date;
}

export type TokenVerifier = (authorization: string | undefined) => Promise<AuthContext | null>;

/** jose error codes that mean "the key set could not be had", not "the token is bad". */
const KEYS_UNAVAILABLE = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JOSE_GENERIC']);

function unauthenticated(why: string): AppError {
  return new AppError(
    'UNAUTHENTICATED',
    `The access token was rejected (${why}). Refresh it or sign in again.`,
  );
}

export function createTokenVerifier(opts: TokenVerifierOptions): TokenVerifier {
  const keys =
    typeof opts.keys === 'string'
      ? createRemoteJWKSet(new URL(opts.keys), { cooldownDuration: 30_000, cacheMaxAge: 600_000 })
      : opts.keys;
  const tolerance = opts.clockToleranceSeconds ?? 30;
  const now = opts.now ?? (() => new Date());
  // Verified tokens, kept until they expire: a client sends the same token for many requests, and an ES256
  // verification costs more than the rest of a small request. Bounded, and keyed by the whole token.
  const verified = new Lru<string, { auth: AuthContext; exp: number }>(10_000);
  return async (authorization) => {
    if (!authorization) return null;
    const m = /^bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i.exec(authorization);
    if (!m) throw unauthenticated('the Authorization header must be "Bearer <JWT>"');
    const token = m[1]!;
    const nowSeconds = now().getTime() / 1000;
    const hit = verified.get(token);
    if (hit && hit.exp + tolerance > nowSeconds) return hit.auth;
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: opts.issuer,
        audience: opts.audience,
        algorithms: [ACCESS_TOKEN_ALG],
        typ: 'at+jwt',
        clockTolerance: tolerance,
        currentDate: opts.now?.(),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'invalid';
      if (KEYS_UNAVAILABLE.has(code) || (err instanceof TypeError && /fetch/i.test(err.message))) {
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          "The token could not be checked because the identity service's keys are unreachable. Retry shortly.",
          { retryAfterMs: 1000 },
        );
      }
      throw unauthenticated(code === 'ERR_JWT_EXPIRED' ? 'expired' : 'invalid signature or claims');
    }
    const claims = Claims.safeParse(payload);
    if (!claims.success) throw unauthenticated('missing tenant or role claims');
    const auth: AuthContext = {
      tenantId: claims.data.tid,
      principalId: claims.data.sub,
      role: claims.data.role,
      scopes: claims.data.scope.split(' ').filter(Boolean),
    };
    verified.set(token, { auth, exp: (payload as { exp: number }).exp });
    return auth;
  };
}
