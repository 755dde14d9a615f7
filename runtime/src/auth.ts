/**
 * Access-token verification, done by every service (zero trust between gateway and subgraphs): an ES256 JWT
 * (`typ: at+jwt`) from the identity service, checked against its published JWKS (fetched and cached by jose) for
 * signature, issuer, audience and expiry, then against the revocation list (runtime.token_revocations, pushed to
 * every verifier by NOTIFY) on every request. Tokens are never logged.
 */
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { Lru } from './lru.js';
import { z } from 'zod';
import { AppError } from './errors.js';
import type { RevocationList } from './revocation.js';
import { ROLES } from './roles.js';
import type { AuthContext } from './tenancy.js';

export const ACCESS_TOKEN_ALG = 'ES256';

/** Scope a token needs for queries and subscriptions. */
export const SCOPE_READ = 'api:read';
/** Scope a token needs for mutations. */
export const SCOPE_WRITE = 'api:write';

/**
 * After a fetch of the JWKS, how long a token with an unknown `kid` is refused without fetching again. Short, so a
 * key identity has just rotated in verifies within a second; not zero, so tokens with made-up `kid`s (anyone can
 * send them) cause at most one fetch per second per verifier.
 */
export const JWKS_REFETCH_COOLDOWN_MS = 1000;
/** A JWKS older than this is fetched again before use, even when every `kid` is known. */
export const JWKS_MAX_AGE_MS = 600_000;
/**
 * How far past its `exp` (and before its `nbf`/`iat`) an access token is still accepted: clock skew between identity
 * and the verifying service, which run on NTP-synchronised servers. Small on purpose: an expired token is refused
 * within this many seconds everywhere (revocations are kept longer than this: REVOCATION_GRACE_MS).
 */
export const CLOCK_TOLERANCE_SECONDS = 5;

const Id = z.string().min(1).max(200);

const Claims = z.object({
  sub: z.string().min(1),
  tid: z.string().uuid(),
  role: z.enum(ROLES),
  scope: z.string().default(''),
  jti: Id.optional(),
  gid: Id.optional(),
  did: Id.optional(),
  client_id: Id.optional(),
  iat: z.number().int().nonnegative().optional(),
  act: z.object({ sub: Id }).optional(),
});

export interface TokenVerifierOptions {
  issuer: string;
  audience: string;
  /** JWKS URL, or a key resolver (tests, in-process identity). */
  keys: string | JWTVerifyGetKey;
  /** Default CLOCK_TOLERANCE_SECONDS. */
  clockToleranceSeconds?: number;
  now?: () => Date;
  /** Revoked tokens (by jti, grant, device, subject), checked on every call, also for cached tokens. */
  revocations?: RevocationList;
}

export type TokenVerifier = (authorization: string | undefined) => Promise<AuthContext | null>;

/** jose error codes that mean "the key set could not be had", not "the token is bad". */
const KEYS_UNAVAILABLE = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JOSE_GENERIC']);

function unauthenticated(why: string, what = 'Refresh it or sign in again'): AppError {
  return new AppError('UNAUTHENTICATED', `The access token was rejected (${why}). ${what}.`);
}

export function createTokenVerifier(opts: TokenVerifierOptions): TokenVerifier {
  const keys =
    typeof opts.keys === 'string'
      ? createRemoteJWKSet(new URL(opts.keys), {
          cooldownDuration: JWKS_REFETCH_COOLDOWN_MS,
          cacheMaxAge: JWKS_MAX_AGE_MS,
        })
      : opts.keys;
  const tolerance = opts.clockToleranceSeconds ?? CLOCK_TOLERANCE_SECONDS;
  const now = opts.now ?? (() => new Date());
  // Verified tokens, kept until they expire: a client sends the same token for many requests, and an ES256
  // verification costs more than the rest of a small request. Bounded, and keyed by the whole token.
  const verified = new Lru<string, { auth: AuthContext; exp: number }>(10_000);
  const revocations = opts.revocations;
  const checked = (auth: AuthContext): AuthContext => {
    if (revocations?.isRevoked(auth)) throw unauthenticated('it has been revoked', 'Sign in again');
    return auth;
  };
  return async (authorization) => {
    if (!authorization) return null;
    const m = /^bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i.exec(authorization);
    if (!m) throw unauthenticated('the Authorization header must be "Bearer <JWT>"');
    const token = m[1]!;
    const nowSeconds = now().getTime() / 1000;
    const hit = verified.get(token);
    if (hit && hit.exp + tolerance > nowSeconds) return checked(hit.auth);
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
    if (!claims.success) throw unauthenticated('missing or malformed tenant, role or id claims');
    const c = claims.data;
    const auth: AuthContext = {
      tenantId: c.tid,
      principalId: c.sub,
      role: c.role,
      scopes: c.scope.split(' ').filter(Boolean),
      ...(c.jti !== undefined && { tokenId: c.jti }),
      ...(c.gid !== undefined && { grantId: c.gid }),
      ...(c.did !== undefined && { deviceId: c.did }),
      ...(c.client_id !== undefined && { clientId: c.client_id }),
      ...(c.iat !== undefined && { issuedAt: c.iat }),
      expiresAt: (payload as { exp: number }).exp,
      ...(c.act !== undefined && { actor: c.act.sub }),
    };
    verified.set(token, { auth, exp: (payload as { exp: number }).exp });
    return checked(auth);
  };
}

/** The scope an operation needs from a token: `api:read` for queries and subscriptions, `api:write` for mutations. */
export function scopeFor(operation: 'query' | 'mutation' | 'subscription'): string {
  return operation === 'mutation' ? SCOPE_WRITE : SCOPE_READ;
}

/**
 * Refuses (FORBIDDEN) an operation whose token lacks the scope it needs. Anonymous callers (no token) pass: what they
 * may see is the resolvers' decision (e.g. the public `capabilities` query).
 */
export function assertOperationScope(
  auth: AuthContext | null,
  operation: 'query' | 'mutation' | 'subscription',
): void {
  if (!auth) return;
  const needed = scopeFor(operation);
  if (auth.scopes.includes(needed)) return;
  throw new AppError(
    'FORBIDDEN',
    `A ${operation} needs an access token with the scope "${needed}", and this token lacks it. ` +
      `Request "${needed}" in the scope parameter when you sign in or exchange a token, then retry with the new token.`,
    { requiredScope: needed },
  );
}
