import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../src/log.js';
import { runPeriodically } from '../src/periodic.js';

describe('runPeriodically', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs a pass every interval after the last one ended, logs a failing pass and goes on, stop waits', async () => {
    const lines: string[] = [];
    const log = createLogger({}, { write: (l) => lines.push(l) });
    let passes = 0;
    let release: (() => void) | null = null;
    const stop = runPeriodically({
      intervalMs: 100,
      log,
      failureMessage: 'pass failed',
      run: async () => {
        passes++;
        if (passes === 2) throw new Error('boom');
        if (passes === 3) await new Promise<void>((r) => (release = r));
      },
    });
    await vi.advanceTimersByTimeAsync(99);
    expect(passes).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(passes).toBe(2);
    expect(lines.some((l) => l.includes('"pass failed"') && l.includes('boom'))).toBe(true);
    await vi.advanceTimersByTimeAsync(100);
    expect(passes).toBe(3); // running, held open: no overlapping pass however long we wait
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes).toBe(3);
    let stopped = false;
    const stopping = stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    release!();
    await stopping;
    await vi.advanceTimersByTimeAsync(1000);
    expect(passes).toBe(3);
  });
});
