/** A fake clock for the outbox, inbox and intent tests: sleep() records the delay and moves time at once. */
import type { Clock } from '../../src/clock.js';

export class TestClock implements Clock {
  readonly sleeps: number[] = [];
  constructor(public current = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw new Error('aborted');
    this.sleeps.push(ms);
    this.current += ms;
    await Promise.resolve();
  }
}

/** Ids and keys counted up: id-1, id-2, … */
export function counter(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

/** An error shaped like the SDK's AgentGraphError. */
export function sdkError(code: string, retryable: boolean, retryAfterMs?: number, status?: number): Error {
  return Object.assign(new Error(`${code} from the server`), {
    code,
    retryable,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(status === undefined ? {} : { status }),
  });
}

/** A promise with its resolve/reject outside. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
