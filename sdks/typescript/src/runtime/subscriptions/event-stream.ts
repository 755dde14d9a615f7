/**
 * One graphql-sse request in distinct-connections mode (graphql-sse PROTOCOL.md): POST the GraphQL request with
 * `Accept: text/event-stream` through the injected `fetch`, and read the answer.
 *
 * - `openEventStream` resolves once answer headers arrived (or `connectTimeoutMs` passed): either an open stream,
 *   or the refusal (status, headers, parsed JSON body) for classification. Network failures become NetworkError,
 *   the connect timeout TimeoutError, the caller's abort AbortError.
 * - `EventStream.read()` returns the next batch of parsed items (events and heartbeat comments), `'ended'` when the
 *   body ended, or `'idle'` when no byte arrived for `idleTimeoutMs` (the stream is then closed). Time is the
 *   injected clock's: tests drive the idle timer with a fake clock.
 */
import type { Clock } from '../clock.js';
import { AbortError, NetworkError, TimeoutError } from '../errors.js';
import type { FetchLike } from '../transport.js';
import { EventStreamParser, type SseItem } from './sse-parser.js';

export const EVENT_STREAM = 'text/event-stream';

export interface StreamRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface Refusal {
  kind: 'refused';
  status: number;
  headers: Headers;
  /** The body parsed as JSON, or undefined. */
  body: unknown;
  /** The answer was 2xx but not an event stream (the server does not stream here). */
  notAStream: boolean;
}

export interface EventStream {
  kind: 'open';
  status: number;
  /** The next items; 'ended' when the body ended, 'idle' after `idleTimeoutMs` of silence. */
  read(): Promise<SseItem[] | 'ended' | 'idle'>;
  /** The last event id the server set (for `Last-Event-ID`). */
  readonly lastEventId: string;
  /** Closes the connection (idempotent). */
  close(): void;
}

/** Races `promise` with a clock sleep; 'timeout' if the sleep won. Aborting `signal` rejects with AbortError. */
async function withTimeout<T>(
  promise: Promise<T>,
  clock: Clock,
  ms: number,
  signal: AbortSignal,
): Promise<T | 'timeout'> {
  const timer = new AbortController();
  const onAbort = () => timer.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const sleeping = clock.sleep(ms, timer.signal).then(
    () => 'timeout' as const,
    () => 'cancelled' as const,
  );
  try {
    const winner = await Promise.race([promise, sleeping]);
    if (winner === 'cancelled') throw new AbortError(signal.reason);
    return winner;
  } finally {
    signal.removeEventListener('abort', onAbort);
    timer.abort();
  }
}

export async function openEventStream(
  fetchFn: FetchLike,
  request: StreamRequest,
  options: { clock: Clock; connectTimeoutMs: number; idleTimeoutMs: number; signal: AbortSignal },
): Promise<EventStream | Refusal> {
  const { clock, signal } = options;
  if (signal.aborted) throw new AbortError(signal.reason);
  const connection = new AbortController();
  const onAbort = () => connection.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const close = () => {
    signal.removeEventListener('abort', onAbort);
    connection.abort();
  };

  const fetching = fetchFn(request.url, {
    method: 'POST',
    headers: request.headers,
    body: request.body,
    signal: connection.signal,
  });
  fetching.catch(() => undefined); // a timeout leaves it pending; its later rejection is expected
  let response: Response | 'timeout';
  try {
    response = await withTimeout(fetching, clock, options.connectTimeoutMs, signal);
  } catch (err) {
    close();
    if (signal.aborted) throw new AbortError(signal.reason);
    const detail = err instanceof Error ? err.message : String(err);
    throw new NetworkError(`The stream request failed before an answer arrived: ${detail}`, err);
  }
  if (response === 'timeout') {
    close();
    throw new TimeoutError(
      `The stream did not answer within ${options.connectTimeoutMs} ms; reconnecting resumes it.`,
    );
  }

  const contentType = (response.headers.get('content-type') ?? '').toLowerCase();
  if (response.status !== 200 || !contentType.startsWith(EVENT_STREAM) || !response.body) {
    let text = '';
    try {
      text = await response.text();
    } catch {
      text = '';
    } finally {
      close();
    }
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return {
      kind: 'refused',
      status: response.status,
      headers: response.headers,
      body,
      notAStream: response.status >= 200 && response.status < 300,
    };
  }

  const reader = response.body.getReader();
  const parser = new EventStreamParser();
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    close();
    reader.cancel().catch(() => undefined);
  };
  return {
    kind: 'open',
    status: response.status,
    get lastEventId() {
      return parser.lastEventId;
    },
    close: finish,
    async read() {
      for (;;) {
        if (finished) return 'ended';
        const reading = reader.read();
        reading.catch(() => undefined);
        let chunk: ReadableStreamReadResult<Uint8Array> | 'timeout';
        try {
          chunk = await withTimeout(reading, clock, options.idleTimeoutMs, signal);
        } catch (err) {
          finish();
          if (signal.aborted) throw new AbortError(signal.reason);
          const detail = err instanceof Error ? err.message : String(err);
          throw new NetworkError(`The stream broke: ${detail}`, err);
        }
        if (chunk === 'timeout') {
          finish();
          return 'idle';
        }
        if (chunk.done) {
          const rest = parser.end();
          finished = true;
          close();
          return rest.length > 0 ? rest : 'ended';
        }
        const items = parser.feed(chunk.value);
        if (items.length > 0) return items;
      }
    },
  };
}
