/**
 * The retry decision after a failed attempt, as one pure function so every rule sits in one place (and ports to C#
 * and Python line by line). In order:
 *
 * 1. UNAUTHENTICATED (or a bare 401): refresh the token and resend at once, once per call — unless it was already
 *    refreshed or there is no token provider (`unauthenticated`), or the attempts are spent (`attempts`).
 * 2. Not retryable (`not-retryable`); retryable but the operation may not be resent, a keyless mutation
 *    (`not-idempotent`); `maxAttempts` requests sent (`attempts`).
 * 3. Draw the jitter delay (one random number, retry index = waits so far). A server-requested wait replaces it
 *    exactly; above `maxRetryAfterMs` → `retry-after-cap`. A wait that would end more than `budgetMs` after the
 *    call started → `budget`. Otherwise wait.
 */
import type { DecorrelatedJitterBackoff } from './backoff.js';
import { wantsTokenRefresh } from './classify.js';
import type { AgentGraphError, GiveUpReason } from './errors.js';
import type { RetrySettings } from './settings.js';

export type RetryDecision =
  { action: 'refresh' } | { action: 'wait'; delayMs: number } | { action: 'give-up'; reason: GiveUpReason };

export interface RetryState {
  /** Requests sent so far in this call. */
  attempts: number;
  /** Waits so far in this call (the backoff's attempt index). */
  retries: number;
  /** Whether the token was already refreshed in this call. */
  refreshed: boolean;
  /** Whether a token provider exists to refresh with. */
  canRefresh: boolean;
  /** Queries and mutations with an idempotency key. */
  mayRetry: boolean;
  /** Clock time the call started. */
  startedAt: number;
}

export function decideRetry(
  error: AgentGraphError,
  state: RetryState,
  settings: RetrySettings,
  backoff: DecorrelatedJitterBackoff,
  nowMs: number,
): RetryDecision {
  const giveUp = (reason: GiveUpReason): RetryDecision => ({ action: 'give-up', reason });
  if (wantsTokenRefresh(error)) {
    if (state.refreshed || !state.canRefresh) return giveUp('unauthenticated');
    if (state.attempts >= settings.maxAttempts) return giveUp('attempts');
    return { action: 'refresh' };
  }
  if (!error.retryable) return giveUp('not-retryable');
  if (!state.mayRetry) return giveUp('not-idempotent');
  if (state.attempts >= settings.maxAttempts) return giveUp('attempts');

  let delayMs = backoff.next(state.retries);
  if (error.retryAfterMs !== undefined) {
    if (error.retryAfterMs > settings.maxRetryAfterMs) return giveUp('retry-after-cap');
    delayMs = error.retryAfterMs;
  }
  if (nowMs - state.startedAt + delayMs > settings.budgetMs) return giveUp('budget');
  return { action: 'wait', delayMs };
}
