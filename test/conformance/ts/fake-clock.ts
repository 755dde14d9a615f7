/**
 * The conformance suite's fake clock: `sleep(ms)` records the delay, moves time forward by exactly `ms` and
 * resolves at once (no real waiting), so expected delays and budgets are exact. `advance(ms)` moves time without
 * recording a sleep (used for scripted request latency).
 */
export class FakeClock {
  private current: number;
  readonly sleeps: number[] = [];

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new Error(`FakeClock.advance needs a non-negative number, got ${ms}`);
    this.current += ms;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw abortError(signal);
    this.sleeps.push(ms);
    this.current += ms;
    await Promise.resolve();
    if (signal?.aborted) throw abortError(signal);
  }
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const err = new Error('The operation was aborted.');
  err.name = 'AbortError';
  return err;
}
