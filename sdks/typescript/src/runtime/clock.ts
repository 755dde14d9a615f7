/**
 * Time, injected. The retry loop reads `now()` for its time budget and waits with `sleep()`, so tests drive both
 * with a fake clock and assert exact delays. (Per-attempt timeouts are a wall-clock guard on the real transport and
 * use the platform timer; see transport.ts.)
 */
import { AbortError } from './errors.js';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds; rejects with an AbortError as soon as `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new AbortError(signal.reason));
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(new AbortError(signal?.reason));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
