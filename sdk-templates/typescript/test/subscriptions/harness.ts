/**
 * Test harness for subscriptions: a manual clock (time moves only when the test says so), a scripted fetch
 * (stream and query answers in order, recorded requests), SSE bodies the test writes into, and `drive`, which runs
 * the event loop until a promise settles, firing the next clock timer whenever nothing else can happen.
 */
import { AbortError, type Clock } from '../../src/index.js';

interface Timer {
  due: number;
  ms: number;
  order: number;
  resolve: () => void;
}

export class ManualClock implements Clock {
  /** Every sleep that ran to its end, in order (cancelled ones are not here). */
  readonly fired: number[] = [];
  private timers: Timer[] = [];
  private order = 0;

  constructor(public current = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new AbortError(signal.reason));
        return;
      }
      const timer: Timer = {
        due: this.current + ms,
        ms,
        order: this.order++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.timers = this.timers.filter((t) => t !== timer);
        reject(new AbortError(signal?.reason));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.timers.push(timer);
    });
  }

  /** Durations of the sleeps pending now. */
  pending(): number[] {
    return this.timers.map((t) => t.ms);
  }

  /** Moves time to the earliest pending timer and fires it; false when none is pending. */
  fireNext(): boolean {
    if (this.timers.length === 0) return false;
    const next = [...this.timers].sort((a, b) => a.due - b.due || a.order - b.order)[0]!;
    this.timers = this.timers.filter((t) => t !== next);
    this.current = Math.max(this.current, next.due);
    this.fired.push(next.ms);
    next.resolve();
    return true;
  }

  /** Moves time forward by `ms`, firing every timer due by then (in order). */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((t) => t.due <= target);
      if (due.length === 0) break;
      this.fireNext();
    }
    this.current = target;
    await settle();
  }
}

/** Lets every pending promise job and I/O-free callback run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Waits for `promise`, firing clock timers one at a time whenever the loop is otherwise idle. */
export async function drive<T>(promise: Promise<T>, clock: ManualClock, maxTimers = 1_000): Promise<T> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let fired = 0; ; fired++) {
    await settle();
    if (done) return promise;
    if (fired >= maxTimers || !clock.fireNext()) {
      throw new Error(`drive: stuck after ${fired} timers (nothing pending and the promise did not settle)`);
    }
  }
}

export const sse = {
  next: (data: unknown) => `event: next\ndata: ${JSON.stringify(data)}\n\n`,
  complete: 'event: complete\ndata:\n\n',
  heartbeat: ':\n\n',
};

/**
 * An event-stream body the test writes into. Chunks are handed out one per read, so an end scripted after them
 * (close or error) happens only once the reader took them all. Aborting the request errors it, as a real fetch does.
 */
export class SseBody {
  readonly stream: ReadableStream<Uint8Array>;
  /** The reader cancelled the body (the runtime closed the stream). */
  cancelled = false;
  /** The request's signal aborted. */
  aborted = false;
  private readonly queue: Array<Uint8Array | { end: 'close' } | { end: 'error'; error: unknown }> = [];
  private wake: (() => void) | null = null;
  private ended = false;

  constructor(chunks: string[] = [], end?: 'close' | 'error') {
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          while (this.queue.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
          const item = this.queue.shift()!;
          if (item instanceof Uint8Array) controller.enqueue(item);
          else if (item.end === 'close') controller.close();
          else controller.error(item.error);
        },
        cancel: () => {
          this.cancelled = true;
        },
      },
      { highWaterMark: 0 },
    );
    for (const chunk of chunks) this.push(chunk);
    if (end === 'close') this.close();
    if (end === 'error') this.fail();
  }

  private add(item: (typeof this.queue)[number]): void {
    if (this.ended) return;
    if (!(item instanceof Uint8Array)) this.ended = true;
    this.queue.push(item);
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  push(text: string): void {
    this.add(new TextEncoder().encode(text));
  }

  close(): void {
    this.add({ end: 'close' });
  }

  fail(error: unknown = new TypeError('terminated')): void {
    this.add({ end: 'error', error });
  }

  /** Errors the body now, dropping what was not read (what an aborted fetch does). */
  abort(error: unknown): void {
    this.queue.length = 0;
    this.ended = false;
    this.fail(error);
  }
}

export interface RecordedRequest {
  url: string;
  headers: Record<string, string>;
  body: any;
  signal: AbortSignal | undefined;
}

export type Answer = Response | Error | ((req: RecordedRequest) => Response | Error);

const bodies = new WeakMap<Response, SseBody>();

export function sseResponse(body: SseBody): Response {
  const response = new Response(body.stream, {
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8' },
  });
  bodies.set(response, body);
  return response;
}

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/graphql-response+json', ...headers },
  });
}

/** A fetch that answers stream requests (URL ending in /stream) and queries from two scripts, in order. */
export class ScriptedFetch {
  readonly streamRequests: RecordedRequest[] = [];
  readonly queryRequests: RecordedRequest[] = [];

  constructor(
    private readonly streams: Answer[],
    private readonly queries: Answer[] = [],
  ) {}

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = String(input);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const req: RecordedRequest = {
      url,
      headers,
      body: init?.body ? JSON.parse(String(init.body)) : undefined,
      signal: init?.signal ?? undefined,
    };
    const isStream = url.endsWith('/stream');
    const list = isStream ? this.streamRequests : this.queryRequests;
    const script = isStream ? this.streams : this.queries;
    list.push(req);
    const answer = script[list.length - 1];
    if (answer === undefined) {
      throw new Error(
        `ScriptedFetch: no answer scripted for ${isStream ? 'stream' : 'query'} #${list.length}`,
      );
    }
    const value = typeof answer === 'function' ? answer(req) : answer;
    if (value instanceof Error) throw value;
    const body = bodies.get(value);
    if (body) {
      // A real fetch errors the body when the request is aborted.
      init?.signal?.addEventListener('abort', () => {
        body.aborted = true;
        body.abort(new DOMException('This operation was aborted', 'AbortError'));
      });
    }
    return value;
  };
}
