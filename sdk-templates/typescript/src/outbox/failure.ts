/**
 * How the outbox reads a failed send: the SDK's errors carry `code`, `message`, `retryable`, `retryAfterMs` and
 * `status` (AgentGraphError). `retryable: true` → RETRYABLE with a delay; anything else → POISON at once. A thrown
 * value that is not such an error (a bug in the send function) is not retryable either: retrying it forever would
 * hide the bug behind a growing queue, so it goes to the dead-letter list where the app can see it.
 *
 * A retryable failure is a *failed delivery* (counted toward the poison limit, `maxFailedDeliveries`) when the server
 * took the message and failed on it: code INTERNAL_SERVER_ERROR, or HTTP status 500 under any code. Offline and
 * "wait" answers (NETWORK_ERROR, TIMEOUT, 502/503/504, RATE_LIMITED, SERVICE_UNAVAILABLE,
 * IDEMPOTENCY_KEY_IN_PROGRESS) say nothing about the message: they retry until the TTL without counting.
 */

export interface SendFailure {
  code: string;
  message: string;
  retryable: boolean;
  /** The wait the server asked for, if any. */
  retryAfterMs?: number;
  /** The HTTP status of the answer, when there was one. */
  status?: number;
}

const MAX_MESSAGE = 500;

export function describeFailure(error: unknown): SendFailure {
  const e = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const code = typeof e.code === 'string' && e.code.length > 0 ? e.code : 'UNKNOWN_ERROR';
  const raw = typeof e.message === 'string' ? e.message : String(error);
  const failure: SendFailure = {
    code,
    message: raw.length > MAX_MESSAGE ? `${raw.slice(0, MAX_MESSAGE)}…` : raw,
    retryable: e.retryable === true,
  };
  if (typeof e.retryAfterMs === 'number' && Number.isFinite(e.retryAfterMs) && e.retryAfterMs >= 0) {
    failure.retryAfterMs = e.retryAfterMs;
  }
  if (typeof e.status === 'number' && Number.isInteger(e.status)) failure.status = e.status;
  return failure;
}

/** True when a retryable failure counts toward the poison limit: the server took the message and failed on it. */
export function isFailedDelivery(failure: SendFailure): boolean {
  return failure.retryable && (failure.code === 'INTERNAL_SERVER_ERROR' || failure.status === 500);
}

/** The delay before the next send of an entry that failed `attempt` times (1 after the first failure). */
export type OutboxDelay = (attempt: number, failure: SendFailure) => number;

/**
 * Exponential backoff between whole sends: baseMs · 2^(attempt−1) capped at maxMs, and never shorter than the
 * server's wait (retryAfterMs). No jitter: the client's own retries inside each send are already jittered
 * (decorrelated jitter); this spaces whole sends out. Every SDK computes the same numbers (conformance vectors).
 */
export function exponentialOutboxDelay(options: { baseMs?: number; maxMs?: number } = {}): OutboxDelay {
  const baseMs = options.baseMs ?? 1_000;
  const maxMs = options.maxMs ?? 5 * 60_000;
  return (attempt, failure) => {
    const backoff = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
    return Math.max(backoff, failure.retryAfterMs ?? 0);
  };
}

/** 1 s, 2 s, 4 s, … capped at 5 minutes; at least the server's Retry-After. */
export const defaultOutboxDelay: OutboxDelay = exponentialOutboxDelay();
