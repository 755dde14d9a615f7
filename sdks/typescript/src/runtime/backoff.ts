/**
 * Decorrelated-jitter backoff, exactly Polly v8's `DecorrelatedJitterBackoffV2` (Polly.Core/Retry/RetryHelper.cs,
 * formula by George Polevoy, scaled by Dylan Reisenberger), so the C# SDK (Polly itself) and the Python SDK (a port
 * of this file) sleep the same delays for the same random numbers.
 *
 * For retry number `attempt` (0 for the first retry) with base delay `f` (the median first delay, 200 ms here):
 *
 *     t     = attempt + random()                      random() in [0, 1)
 *     next  = 2^t * tanh(sqrt(4 * t))                 P_FACTOR = 4.0
 *     delay = (next - prev) * (1 / 1.4) * f           RP_SCALING_FACTOR = 1 / 1.4; prev = next afterwards (from 0)
 *
 * computed in .NET ticks (100 ns, `f` = baseDelayMs * 10 000 ticks), truncated to a whole tick like Polly's
 * `(long)` cast and capped at TimeSpan.MaxValue.Ticks - 1000; `next` infinite → that cap. Then, as in Polly's
 * `GetRetryDelay`, a delay above `maxDelayMs` becomes `maxDelayMs`. Result in milliseconds (a multiple of 0.0001).
 */

export const P_FACTOR = 4.0;
export const RP_SCALING_FACTOR = 1 / 1.4;
export const TICKS_PER_MS = 10_000;
/** TimeSpan.MaxValue.Ticks - 1000, as the double Polly compares with: (double)long.MaxValue - 1000. */
export const MAX_TIMESPAN_TICKS = Number(9_223_372_036_854_775_807n) - 1000;

export interface BackoffStep {
  delayMs: number;
  /** The state to pass as `prev` to the next step. */
  next: number;
}

/** One step of the formula (no max-delay cap). */
export function decorrelatedJitterBackoffV2(
  attempt: number,
  baseDelayMs: number,
  prev: number,
  random: () => number,
): BackoffStep {
  if (baseDelayMs === 0) return { delayMs: 0, next: prev };
  const targetTicksFirstDelay = baseDelayMs * TICKS_PER_MS;
  const t = attempt + random();
  const next = Math.pow(2, t) * Math.tanh(Math.sqrt(P_FACTOR * t));
  if (!Number.isFinite(next)) return { delayMs: MAX_TIMESPAN_TICKS / TICKS_PER_MS, next };
  const formulaIntrinsicValue = next - prev;
  // Same evaluation order as C#: (value * RpScalingFactor) * targetTicks.
  const ticks = Math.trunc(
    Math.min(formulaIntrinsicValue * RP_SCALING_FACTOR * targetTicksFirstDelay, MAX_TIMESPAN_TICKS),
  );
  return { delayMs: ticks / TICKS_PER_MS, next };
}

/** The stateful series for one logical call: `next(attempt)` draws one random number per retry. */
export class DecorrelatedJitterBackoff {
  private prev = 0;

  constructor(
    private readonly baseDelayMs: number,
    private readonly maxDelayMs: number | undefined,
    private readonly random: () => number,
  ) {}

  next(attempt: number): number {
    const step = decorrelatedJitterBackoffV2(attempt, this.baseDelayMs, this.prev, this.random);
    this.prev = step.next;
    if (this.maxDelayMs !== undefined && step.delayMs > this.maxDelayMs) return this.maxDelayMs;
    return step.delayMs;
  }
}
