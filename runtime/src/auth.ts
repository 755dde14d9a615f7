/**
 * Stateless access-token verification, done by every service (zero trust between gateway and subgraphs):
 * an ES256 JWT from the identity service, checked against its published JWKS (fetched and cached by jose),
 * for issuer, audience and expiry. Tokens are never logged.
 */
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
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
  return async (authorization) => {
    if (!authorization) return null;
    const m = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(authorization);
    if (!m) throw unauthenticated('the Authorization header must be "Bearer <JWT>"');
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(m[1]!, keys, {
        issuer: opts.issuer,
        audience: opts.audience,
        algorithms: [ACCESS_TOKEN_ALG],
        clockTolerance: opts.clockToleranceSeconds ?? 30,
        currentDate: opts.now?.(),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'invalid';
      throw unauthenticated(code === 'ERR_JWT_EXPIRED' ? 'expired' : 'invalid signature or claims');
    }
    const claims = Claims.safeParse(payload);
    if (!claims.success) throw unauthenticated('missing tenant or role claims');
    return {
      tenantId: claims.data.tid,
      principalId: claims.data.sub,
      role: claims.data.role,
      scopes: claims.data.scope.split(' ').filter(Boolean),
    };
  };
}
