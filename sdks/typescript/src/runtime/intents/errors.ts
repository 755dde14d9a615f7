/**
 * Why an intent was refused. Every refusal is an IntentVerificationError with one of these reasons; its `code` is
 * `INTENT_<REASON>` (an AgentGraphError, so apps handle it with the SDK's other errors). The message says what
 * was wrong and never holds the token.
 */
import { AgentGraphError } from '../errors.js';

export type IntentRejectionReason =
  /** Not a compact JWS, undecodable header or claims, or no `kid`. */
  | 'MALFORMED'
  /** Header `typ` is not `intent+jwt`. */
  | 'WRONG_TYP'
  /** `alg` not in the allow-list (ES256, EdDSA by default). */
  | 'ALG_NOT_ALLOWED'
  /** No key with this `kid` in the key set (after one refetch of a remote JWKS). */
  | 'UNKNOWN_KID'
  /** The signature does not verify with the key of that `kid`. */
  | 'FORGED_SIGNATURE'
  | 'WRONG_ISSUER'
  /** `aud` is not this device. */
  | 'WRONG_AUDIENCE'
  /** `exp` has passed (beyond the allowed skew). */
  | 'EXPIRED'
  /** `nbf` or `iat` is in the future (beyond the allowed skew). */
  | 'NOT_YET_VALID'
  /** A required claim is absent. */
  | 'MISSING_CLAIM'
  /** A claim has the wrong type (e.g. `seq` not a non-negative integer). */
  | 'INVALID_CLAIM'
  /** This `jti` was already accepted. */
  | 'REPLAYED'
  /** The JWKS could not be fetched or is not a key set. */
  | 'JWKS_UNAVAILABLE';

/** Reasons where trying the same intent again later can succeed. */
const RETRYABLE: ReadonlySet<IntentRejectionReason> = new Set(['JWKS_UNAVAILABLE']);

export class IntentVerificationError extends AgentGraphError {
  readonly reason: IntentRejectionReason;
  /** The claim concerned (aud, exp, seq, ...), when one is. */
  readonly claim?: string;

  constructor(
    reason: IntentRejectionReason,
    message: string,
    options: { claim?: string; cause?: unknown; retryable?: boolean } = {},
  ) {
    super({
      code: `INTENT_${reason}`,
      message: `Intent refused (${reason}): ${message}`,
      retryable: options.retryable ?? RETRYABLE.has(reason),
      cause: options.cause,
    });
    this.reason = reason;
    if (options.claim !== undefined) this.claim = options.claim;
  }
}
