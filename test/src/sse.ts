/** Test helpers for graphql-sse streams: an event queue over the real client, and a raw byte reader. */
import type { ExecutionResult } from 'graphql';
import { createClient } from 'graphql-sse';

export interface Subscription<T = Record<string, unknown>> {
  /** Resolves with the next event (waits for it). */
  next(): Promise<ExecutionResult<T>>;
  /** Resolves when the server completed the stream, rejects on a stream error. */
  readonly ended: Promise<void>;
  dispose(): void;
}

export function subscribe<T = Record<string, unknown>>(
  streamUrl: string,
  token: string | null,
  query: string,
  variables?: Record<string, unknown>,
  options: { singleConnection?: boolean } = {},
): Subscription<T> {
  const client = createClient({
    url: streamUrl,
    singleConnection: options.singleConnection ?? false,
    retryAttempts: 0,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const queue: ExecutionResult<T>[] = [];
  const waiters: Array<(v: ExecutionResult<T>) => void> = [];
  let endedResolve!: () => void;
  let endedReject!: (e: unknown) => void;
  const ended = new Promise<void>((res, rej) => {
    endedResolve = res;
    endedReject = rej;
  });
  ended.catch(() => undefined);
  let failure: unknown = null;
  const failWaiters: Array<(e: unknown) => void> = [];
  const dispose = client.subscribe<T>(
    { query, variables },
    {
      next(value) {
        const w = waiters.shift();
        failWaiters.shift();
        if (w) w(value as ExecutionResult<T>);
        else queue.push(value as ExecutionResult<T>);
      },
      error(err) {
        failure = err;
        for (const f of failWaiters.splice(0)) f(err);
        waiters.splice(0);
        endedReject(err);
      },
      complete() {
        const err = new Error('stream completed');
        for (const f of failWaiters.splice(0)) f(err);
        waiters.splice(0);
        endedResolve();
      },
    },
  );
  return {
    next() {
      const v = queue.shift();
      if (v) return Promise.resolve(v);
      if (failure) return Promise.reject(failure);
      return new Promise((resolve, reject) => {
        waiters.push(resolve);
        failWaiters.push(reject);
      });
    },
    ended,
    dispose() {
      dispose();
      client.dispose();
    },
  };
}

/** Reads an SSE response's raw text, chunk by chunk, until a condition holds. */
export async function openRaw(
  streamUrl: string,
  token: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<{
  response: Response;
  text(): string;
  until(pred: (text: string) => boolean): Promise<string>;
  /** Reads until the server ends the response; resolves with all the text. */
  toEnd(): Promise<string>;
  cancel(): Promise<void>;
}> {
  const controller = new AbortController();
  const response = await fetch(streamUrl, {
    method: 'POST',
    signal: controller.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify({ query, variables }),
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  return {
    response,
    text: () => text,
    async until(pred) {
      while (!pred(text)) {
        const { value, done } = await reader.read();
        if (done) {
          if (pred(text)) break;
          throw new Error(`stream ended before the condition held; got: ${JSON.stringify(text)}`);
        }
        text += decoder.decode(value, { stream: true });
      }
      return text;
    },
    async toEnd() {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return text;
        text += decoder.decode(value, { stream: true });
      }
    },
    async cancel() {
      controller.abort();
      await reader.cancel().catch(() => undefined);
    },
  };
}
