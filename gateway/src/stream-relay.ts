/**
 * The per-stream part of /graphql/stream, kept small because a gateway holds thousands of idle streams: one plain
 * `node:http` request to the subgraph's graphql-sse endpoint (distinct-connections mode), whose event-stream bytes are
 * copied to the client as they are. Only a `next` event that carries `errors` is parsed (to mask what the client may
 * not see); comments (pings) and other events pass untouched. No WHATWG streams, no graphql-sse client, no
 * per-stream timer (heartbeats come from one shared timer, `HeartbeatGroup`), no promise held while idle.
 *
 * Wire format (graphql-sse 2.x, distinct connections): `:\n\n` comments, `event: next\ndata: <json>\n\n`, and a last
 * `event: complete\ndata:\n\n`. An upstream that ends without `complete` has failed (`onFailure` says what to send).
 */
import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';

export interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export const realTimers: Timers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
};

export const COMPLETE_EVENT = 'event: complete\ndata:\n\n';
const HEARTBEAT = ':\n\n';
const EVENT_END = Buffer.from('\n\n');
const NEXT_PREFIX = Buffer.from('event: next\ndata:');
const COMPLETE_PREFIX = Buffer.from('event: complete');
const ERRORS_KEY = Buffer.from('"errors"');

/** An open stream as the handler keeps it: its client's response, and how to complete it (shutdown). */
export interface OpenStream {
  readonly res: ServerResponse;
  finish(): void;
}

/**
 * The open streams, and one interval for all of them: a comment line on each, every `ms`; it runs only while a stream
 * is open. One set for both (the registry is a set entry per idle stream).
 */
export class HeartbeatGroup<T extends OpenStream = OpenStream> {
  private readonly members = new Set<T>();
  private handle: unknown = null;
  constructor(
    private readonly timers: Timers,
    private readonly ms: number,
  ) {}
  get size(): number {
    return this.members.size;
  }
  add(stream: T): void {
    this.members.add(stream);
    this.handle ??= this.timers.setInterval(() => this.beat(), this.ms);
  }
  delete(stream: T): void {
    this.members.delete(stream);
    if (this.members.size === 0 && this.handle !== null) {
      this.timers.clearInterval(this.handle);
      this.handle = null;
    }
  }
  /** The open streams now (a copy: completing one removes it). */
  list(): T[] {
    return [...this.members];
  }
  private beat(): void {
    for (const { res } of this.members) if (res.writable) res.write(HEARTBEAT);
  }
}

/** What the subgraph answered before streaming: accepted (200-299), refused (status and body), or unreachable. */
export type UpstreamAnswer =
  | { kind: 'accepted'; request: ClientRequest; response: IncomingMessage }
  | { kind: 'refused'; status: number; body: string }
  | { kind: 'unreachable'; error: Error };

const MAX_REFUSAL_BYTES = 64 * 1024;

/**
 * POSTs the subscription to `url` (a subgraph's /graphql/stream) on a connection of its own (no agent: nothing to
 * pool, and no agent bookkeeping per stream) and resolves once it answered. `abort` destroys the request; until the
 * answer it resolves `unreachable`, afterwards the caller owns `request`/`response`.
 */
export function openUpstream(
  url: URL,
  headers: Record<string, string>,
  body: string,
): { answer: Promise<UpstreamAnswer>; abort(): void } {
  const request = http.request(url, {
    method: 'POST',
    createConnection: (options) => net.connect(options as net.NetConnectOpts),
    headers: {
      ...headers,
      accept: 'text/event-stream',
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
    },
  });
  const answer = new Promise<UpstreamAnswer>((resolve) => {
    const onError = (error: Error) => resolve({ kind: 'unreachable', error });
    request.once('error', onError);
    request.once('response', (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        request.off('error', onError);
        resolve({ kind: 'accepted', request, response });
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_REFUSAL_BYTES) chunks.push(c);
      });
      response.once('end', () =>
        resolve({ kind: 'refused', status, body: Buffer.concat(chunks).toString('utf8') }),
      );
      response.once('error', () =>
        resolve({ kind: 'refused', status, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
  });
  request.setNoDelay(true);
  request.end(body);
  return { answer, abort: () => request.destroy() };
}

/** How one client's events are rewritten. */
export interface StreamEvents {
  /** Rewrites the data of a `next` event that holds errors (JSON text in, JSON text out). */
  maskErrors(data: string): string;
  /** The upstream ended or broke without `complete`: the `next` event data to send before completing. */
  onFailure(reason: string): string;
}

export interface RelayHooks extends StreamEvents {
  /** Called once, when the relay is over (either side closed, completed, or `finish()`). */
  onEnd(reason: string): void;
}

/**
 * Copies one upstream event stream to one client response. Closing either side closes the other; `finish()` completes
 * the client's stream (shutdown). Backpressure: when the client cannot take more, the upstream is paused until it can.
 */
export class SseRelay implements OpenStream {
  private leftover: Buffer | null = null;
  private ended = false;

  constructor(
    readonly res: ServerResponse,
    private readonly request: ClientRequest,
    private readonly response: IncomingMessage,
    private readonly hooks: RelayHooks,
  ) {
    response.on('data', (chunk: Buffer) => this.onData(chunk));
    // `on`, not `once` (no wrapper per listener): every handler is a no-op once the relay ended.
    response.on('end', () => this.fail('the stream source ended without completing'));
    response.on('error', (err: Error) => this.fail(err.message));
    response.on('close', () => this.fail('the connection to the stream source closed'));
    request.on('error', (err: Error) => this.fail(err.message));
    res.on('close', () => this.stop());
    res.on('drain', () => response.resume());
  }

  /** Completes the client's stream and closes the upstream one (gateway shutdown). */
  finish(): void {
    this.complete();
  }

  private onData(chunk: Buffer): void {
    if (this.ended) return;
    let buf = this.leftover ? Buffer.concat([this.leftover, chunk]) : chunk;
    this.leftover = null;
    let start = 0;
    let passFrom = 0; // bytes [passFrom, start) are events to copy unchanged
    for (;;) {
      const end = buf.indexOf(EVENT_END, start);
      if (end < 0) break;
      const next = end + EVENT_END.length;
      if (startsWith(buf, start, COMPLETE_PREFIX)) {
        this.write(buf, passFrom, start);
        this.complete();
        return;
      }
      if (startsWith(buf, start, NEXT_PREFIX)) {
        const errorsAt = buf.indexOf(ERRORS_KEY, start);
        if (errorsAt >= 0 && errorsAt < end) {
          this.write(buf, passFrom, start);
          const data = buf.toString('utf8', start + NEXT_PREFIX.length, end).trim();
          this.writeText(`event: next\ndata: ${this.hooks.maskErrors(data)}\n\n`);
          passFrom = next;
        }
      }
      start = next;
    }
    this.write(buf, passFrom, start);
    if (start < buf.length) {
      buf = buf.subarray(start);
      // A partial event stays until its end arrives; copy it so the socket's chunk can be freed.
      this.leftover = Buffer.from(buf);
    }
  }

  private write(buf: Buffer, from: number, to: number): void {
    if (to <= from || !this.res.writable) return;
    const ok = this.res.write(from === 0 && to === buf.length ? buf : buf.subarray(from, to));
    if (!ok) this.response.pause();
  }

  private writeText(text: string): void {
    if (!this.res.writable) return;
    if (!this.res.write(text)) this.response.pause();
  }

  private fail(reason: string): void {
    if (this.ended) return;
    this.writeText(`event: next\ndata: ${this.hooks.onFailure(reason)}\n\n`);
    this.complete('failed');
  }

  private complete(reason = 'completed'): void {
    if (this.ended) return;
    if (this.res.writable) this.res.end(COMPLETE_EVENT);
    this.stop(reason);
  }

  /** `reason` as StreamEndListener says (without one: the client's response closed). */
  private stop(reason = 'closed'): void {
    if (this.ended) return;
    this.ended = true;
    this.leftover = null;
    this.request.destroy();
    if (!this.res.writableEnded) this.res.end();
    this.hooks.onEnd(reason);
  }
}

function startsWith(buf: Buffer, at: number, prefix: Buffer): boolean {
  return (
    buf.length - at >= prefix.length && buf.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0
  );
}
