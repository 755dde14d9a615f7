/**
 * Intent verification (docs/architecture.md#an-intents-path): a compact JWS signed by the platform, checked before the device
 * does anything with it. In order:
 *   1. shape: a compact JWS whose header names a `kid`                                        → MALFORMED
 *   2. `alg` in the allow-list (ES256, EdDSA)                                                   → ALG_NOT_ALLOWED
 *   3. a key with that `kid` (a remote JWKS is refetched once)                                  → UNKNOWN_KID
 *   4. the signature                                                                            → FORGED_SIGNATURE
 *   5. header `typ` = intent+jwt                                                                → WRONG_TYP
 *   6. required claims present: iss, aud, jti, iat, nbf, exp, tid, seq, action                  → MISSING_CLAIM
 *   7. `iss` = the expected issuer, `aud` = this device                                         → WRONG_ISSUER / WRONG_AUDIENCE
 *   8. time, with `clockSkewSec` either way: nbf and iat not in the future, exp not passed      → NOT_YET_VALID / EXPIRED
 *   9. claim types: jti, tid, action non-empty strings; seq a non-negative integer; params an object if present
 *                                                                                               → INVALID_CLAIM
 *  10. `jti` unseen; it is then remembered until exp + skew (only verified intents enter the cache, so forged
 *      tokens cannot fill it or block a real intent's id)                                       → REPLAYED
 * Works in the browser and in Node (jose on Web Crypto); the replay cache decides where memory lives.
 */
import { decodeProtectedHeader, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import { systemClock, type Clock } from '../clock.js';
import { IntentVerificationError, type IntentRejectionReason } from './errors.js';
import { IntentKeySet } from './key-set.js';
import type { ReplayCache } from './replay-cache.js';

export const INTENT_TYP = 'intent+jwt';
export const DEFAULT_INTENT_ALGORITHMS = ['ES256', 'EdDSA'] as const;
export const REQUIRED_INTENT_CLAIMS = ['jti', 'iat', 'nbf', 'exp', 'tid', 'seq', 'action'] as const;

export interface IntentVerifierOptions {
  /** The expected `iss`. */
  issuer: string;
  /** This device's id: the expected `aud`. */
  deviceId: string;
  /** The signing keys: a JWKS as data... */
  jwks?: JSONWebKeySet;
  /** ...or the URL of the published JWKS. */
  jwksUrl?: string;
  /** Used to fetch jwksUrl (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Seen `jti`s. Use SqliteReplayCache on Node (persistent), MemoryReplayCache in the browser. */
  replayCache: ReplayCache;
  clock?: Pick<Clock, 'now'>;
  /** Allowed clock difference, seconds (default 30). */
  clockSkewSec?: number;
  /** Allowed `alg` values (default ES256, EdDSA). */
  algorithms?: readonly string[];
  /** No JWKS refetch for an unknown kid within this long of the last fetch (default 30 s). */
  jwksCooldownMs?: number;
  /** Refetch a cached JWKS older than this (default 10 min). */
  jwksMaxAgeMs?: number;
}

/** A verified intent: the claims, named. Times are epoch milliseconds. */
export interface VerifiedIntent {
  /** `jti`: the intent id. */
  id: string;
  /** `tid`. */
  tenantId: string;
  /** `aud`: this device. */
  deviceId: string;
  issuer: string;
  /** `sub`: who asked for the action, when present. */
  requester: string | null;
  /** `seq`: the per-device sequence number (the stream's resume position). */
  sequence: number;
  action: string;
  /** `params`: the action's parameters ({} when absent). */
  params: Record<string, unknown>;
  issuedAt: number;
  notBefore: number;
  expiresAt: number;
  kid: string;
  alg: string;
  /** Every claim as signed. */
  claims: JWTPayload;
}

export interface IntentVerifier {
  verify(token: string): Promise<VerifiedIntent>;
  /** The key set (its `fetches` counter tells how often a remote JWKS was fetched). */
  readonly keySet: IntentKeySet;
}

const CLAIM_REASON: Record<string, IntentRejectionReason> = {
  typ: 'WRONG_TYP',
  iss: 'WRONG_ISSUER',
  aud: 'WRONG_AUDIENCE',
  nbf: 'NOT_YET_VALID',
  iat: 'NOT_YET_VALID',
  exp: 'EXPIRED',
};

/** jose's errors → our reasons. */
function rejection(error: unknown): IntentVerificationError {
  if (error instanceof IntentVerificationError) return error;
  const e = error as { code?: unknown; claim?: unknown; reason?: unknown; message?: unknown };
  const detail = typeof e.message === 'string' ? e.message : String(error);
  const claim = typeof e.claim === 'string' ? e.claim : undefined;
  switch (e.code) {
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return new IntentVerificationError(
        'FORGED_SIGNATURE',
        'the signature does not verify with the named key.',
      );
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return new IntentVerificationError('ALG_NOT_ALLOWED', detail);
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return new IntentVerificationError('UNKNOWN_KID', detail);
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return new IntentVerificationError(
        'JWKS_UNAVAILABLE',
        'the key set has several keys for this kid and alg.',
      );
    case 'ERR_JWT_EXPIRED':
      return new IntentVerificationError('EXPIRED', detail, { claim: claim ?? 'exp' });
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.reason === 'missing') return new IntentVerificationError('MISSING_CLAIM', detail, { claim });
      if (e.reason === 'invalid') return new IntentVerificationError('INVALID_CLAIM', detail, { claim });
      return new IntentVerificationError((claim && CLAIM_REASON[claim]) || 'INVALID_CLAIM', detail, {
        claim,
      });
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
    case 'ERR_JOSE_NOT_SUPPORTED':
    case 'ERR_JWK_INVALID':
      return new IntentVerificationError('MALFORMED', detail, { cause: error });
    default:
      return new IntentVerificationError('MALFORMED', detail, { cause: error });
  }
}

function invalid(claim: string, message: string): IntentVerificationError {
  return new IntentVerificationError('INVALID_CLAIM', `"${claim}" ${message}.`, { claim });
}

export function createIntentVerifier(options: IntentVerifierOptions): IntentVerifier {
  const clock = options.clock ?? systemClock;
  const skewSec = options.clockSkewSec ?? 30;
  const algorithms = [...(options.algorithms ?? DEFAULT_INTENT_ALGORITHMS)];
  if (!options.issuer) throw new TypeError('createIntentVerifier: issuer is required.');
  if (!options.deviceId) throw new TypeError('createIntentVerifier: deviceId is required.');
  const keySet = new IntentKeySet({
    jwks: options.jwks,
    jwksUrl: options.jwksUrl,
    fetch: options.fetch,
    clock,
    cooldownMs: options.jwksCooldownMs,
    maxAgeMs: options.jwksMaxAgeMs,
  });

  async function verify(token: string): Promise<VerifiedIntent> {
    if (typeof token !== 'string' || token.split('.').length !== 3) {
      throw new IntentVerificationError('MALFORMED', 'not a compact JWS (three base64url parts).');
    }
    try {
      decodeProtectedHeader(token);
    } catch (error) {
      throw new IntentVerificationError('MALFORMED', 'the protected header does not decode.', {
        cause: error,
      });
    }
    const now = clock.now();
    let payload: JWTPayload;
    let header: { kid?: string; alg?: string };
    try {
      ({ payload, protectedHeader: header } = await jwtVerify(token, (h, t) => keySet.keyFor(h, t), {
        algorithms,
        typ: INTENT_TYP,
        issuer: options.issuer,
        audience: options.deviceId,
        requiredClaims: [...REQUIRED_INTENT_CLAIMS],
        currentDate: new Date(now),
        clockTolerance: skewSec,
      }));
    } catch (error) {
      throw rejection(error);
    }
    const nowSec = Math.floor(now / 1000);
    if ((payload.iat as number) > nowSec + skewSec) {
      throw new IntentVerificationError('NOT_YET_VALID', '"iat" is in the future.', { claim: 'iat' });
    }
    const { jti, tid, seq, action, params } = payload as Record<string, unknown>;
    if (typeof jti !== 'string' || jti.length === 0) throw invalid('jti', 'must be a non-empty string');
    if (typeof tid !== 'string' || tid.length === 0) throw invalid('tid', 'must be a non-empty string');
    if (typeof action !== 'string' || action.length === 0)
      throw invalid('action', 'must be a non-empty string');
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
      throw invalid('seq', 'must be a non-negative integer');
    }
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
      throw invalid('params', 'must be an object');
    }
    const exp = payload.exp as number;
    const keepUntil = (exp + skewSec) * 1000;
    if (!(await options.replayCache.remember(jti, keepUntil, now))) {
      throw new IntentVerificationError('REPLAYED', `intent ${jti} was already accepted.`, { claim: 'jti' });
    }
    return {
      id: jti,
      tenantId: tid,
      deviceId: options.deviceId,
      issuer: options.issuer,
      requester: typeof payload.sub === 'string' ? payload.sub : null,
      sequence: seq,
      action,
      params: (params as Record<string, unknown> | undefined) ?? {},
      issuedAt: (payload.iat as number) * 1000,
      notBefore: (payload.nbf as number) * 1000,
      expiresAt: exp * 1000,
      kid: header.kid!,
      alg: header.alg!,
      claims: payload,
    };
  }

  return { verify, keySet };
}
