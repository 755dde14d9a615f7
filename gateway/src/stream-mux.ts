/**
 * Many client streams over one connection to a subgraph: graphql-sse's single-connection mode, which the runtime's
 * subgraph server speaks. The gateway makes a reservation (PUT, with the first caller's token), holds its event stream
 * open (one socket for every stream to that subgraph), and starts each client's subscription as an operation of it
 * (a short POST with the caller's own token and an `operationId`, over a small keep-alive pool); a client that leaves
 * cancels its operation (DELETE). So a stream costs the gateway one socket (the client's) instead of two, and the
 * subgraph none of its own.
 *
 * Events arrive as `event: next\ndata: {"id":"<op>","payload":<result>}` and `event: complete\ndata: {"id":"<op>"}`;
 * the payload's text is handed on as it is (no parse). When the event stream breaks, every operation on it fails
 * (`onFailure`) and the next stream opens a new reservation.
 */
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import net from 'node:net';
import { GATEWAY_SECRET_HEADER, type Logger } from '@agentgraph/runtime';

/** graphql-sse's header naming a reservation. */
const TOKEN_HEADER = 'x-graphql-event-stream-token';
const EVENT_END = Buffer.from('\n\n');
const NEXT_PREFIX = 'event: next\ndata:';
const COMPLETE_PREFIX = 'event: complete\ndata:';
const MAX_REFUSAL_BYTES = 64 * 1024;

/** What one client stream is told about its operation. */
export interface MuxOperation {
  /** A `next` event: the result's JSON text. */
  next(payload: string): void;
  complete(): void;
  /** The connection to the subgraph broke. */
  fail(reason: string): void;
}

export type MuxAnswer =
  | { kind: 'accepted'; id: number }
  | { kind: 'refused'; status: number; body: string }
  | { kind: 'unreachable'; error: Error };

interface Answer {
  status: number;
  body: string;
}

function send(
  url: URL,
  options: http.RequestOptions,
  body: string | null,
): { answer: Promise<Answer>; request: ClientRequest } {
  const request = http.request(url, options);
  const answer = new Promise<Answer>((resolve, reject) => {
    request.once('error', reject);
    request.once('response', (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_REFUSAL_BYTES) chunks.push(c);
      });
      const done = () =>
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      response.once('end', done);
      response.once('error', done);
    });
  });
  if (body === null) request.end();
  else {
    request.setHeader('content-length', String(Buffer.byteLength(body)));
    request.end(body);
  }
  return { answer, request };
}

export class StreamMux {
  private readonly url: URL;
  private readonly pool = new http.Agent({ keepAlive: true, maxSockets: 32, keepAliveMsecs: 10_000 });
  // Keyed by number (a string per idle stream costs memory); the wire's operationId is its decimal text.
  private readonly ops = new Map<number, MuxOperation>();
  private token: string | null = null;
  private events: ClientRequest | null = null;
  private connecting: Promise<void> | null = null;
  private leftover: Buffer | null = null;
  private nextId = 0;
  private closed = false;

  constructor(
    origin: string,
    private readonly log: Logger,
    private readonly subgraph: string,
  ) {
    this.url = new URL('/graphql/stream', origin);
  }

  get operations(): number {
    return this.ops.size;
  }

  /**
   * Starts one subscription (`body`: `{query, variables, operationName}` as JSON) for a caller (`headers`: its
   * authorization, correlation id, ...). `op` hears its events from the moment it is registered, which may be before
   * the subgraph's answer (events are then the caller's to hold until it answered the client).
   */
  async start(
    headers: Record<string, string>,
    subscription: { query: string; variables?: unknown; operationName?: string },
    op: MuxOperation,
  ): Promise<MuxAnswer> {
    try {
      const refused = await this.connect(headers);
      if (refused) return { kind: 'refused', ...refused };
    } catch (err) {
      return { kind: 'unreachable', error: err as Error };
    }
    const id = ++this.nextId;
    const token = this.token!;
    this.ops.set(id, op);
    let answer: Answer;
    try {
      answer = await send(
        this.url,
        {
          method: 'POST',
          agent: this.pool,
          headers: {
            ...headers,
            [TOKEN_HEADER]: token,
            accept: 'application/json',
            'content-type': 'application/json; charset=utf-8',
          },
        },
        JSON.stringify({ ...subscription, extensions: { operationId: String(id) } }),
      ).answer;
    } catch (err) {
      this.ops.delete(id);
      return { kind: 'unreachable', error: err as Error };
    }
    // 202: running; 204: it already ended (its events came, or come, on the event stream).
    if (answer.status === 202 || answer.status === 204 || answer.status === 200)
      return { kind: 'accepted', id };
    this.ops.delete(id);
    // 404: the reservation is gone (its event stream closed meanwhile): the source is unavailable, not the request bad.
    if (answer.status === 404)
      return { kind: 'unreachable', error: new Error('the stream reservation was closed') };
    return { kind: 'refused', ...answer };
  }

  /** The client left: forget the operation and tell the subgraph to stop it. */
  cancel(id: number): void {
    if (!this.ops.delete(id) || !this.token || this.closed) return;
    const url = new URL(this.url);
    url.searchParams.set('operationId', String(id));
    send(
      url,
      { method: 'DELETE', agent: this.pool, headers: { [TOKEN_HEADER]: this.token } },
      null,
    ).answer.catch((err: unknown) =>
      this.log.debug('stream cancel failed', { subgraph: this.subgraph, error: (err as Error).message }),
    );
  }

  /** Drops the event stream (the subgraph then ends every operation on it) and the pool. */
  close(): void {
    this.closed = true;
    this.ops.clear();
    this.events?.destroy();
    this.pool.destroy();
  }

  /** Makes sure a reservation and its event stream are open; a refusal of the reservation is returned as is. */
  private async connect(headers: Record<string, string>): Promise<Answer | null> {
    while (!this.token || !this.events) {
      if (this.closed) throw new Error('The gateway is shutting down.');
      if (!this.connecting) {
        let refusal: Answer | null = null;
        this.connecting = this.open(headers)
          .then((r) => {
            refusal = r;
          })
          .finally(() => {
            this.connecting = null;
          });
        await this.connecting;
        if (refusal) return refusal;
      } else {
        await this.connecting;
      }
    }
    return null;
  }

  private async open(headers: Record<string, string>): Promise<Answer | null> {
    const reserved = await send(
      this.url,
      {
        method: 'PUT',
        agent: this.pool,
        headers: {
          ...(headers['authorization'] ? { authorization: headers['authorization'] } : {}),
          ...(headers[GATEWAY_SECRET_HEADER]
            ? { [GATEWAY_SECRET_HEADER]: headers[GATEWAY_SECRET_HEADER] }
            : {}),
          ...(headers['x-correlation-id'] ? { 'x-correlation-id': headers['x-correlation-id'] } : {}),
          accept: 'text/plain',
        },
      },
      null,
    ).answer;
    if (reserved.status !== 201) return reserved;
    const token = reserved.body.trim();
    // The event stream: a connection of its own (not the pool's), open as long as the reservation is used.
    const request = http.request(this.url, {
      method: 'GET',
      createConnection: (options) => net.connect(options as net.NetConnectOpts),
      headers: { [TOKEN_HEADER]: token, accept: 'text/event-stream' },
    });
    request.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      request.once('error', reject);
      request.once('response', (response: IncomingMessage) => {
        if (response.statusCode !== 200) {
          response.resume();
          request.destroy();
          reject(new Error(`The stream source answered HTTP ${response.statusCode} to its event stream.`));
          return;
        }
        request.off('error', reject);
        let broken = false;
        const broke = (reason: string) => {
          if (broken) return;
          broken = true;
          this.broke(request, reason);
        };
        response.on('data', (chunk: Buffer) => this.onData(chunk));
        response.on('end', () => broke('the stream source ended its event stream'));
        response.on('error', (err: Error) => broke(err.message));
        response.on('close', () => broke('the connection to the stream source closed'));
        request.on('error', (err: Error) => broke(err.message));
        resolve();
      });
      request.end();
    });
    if (this.closed) {
      request.destroy();
      throw new Error('The gateway is shutting down.');
    }
    this.token = token;
    this.events = request;
    this.leftover = null;
    return null;
  }

  private broke(request: ClientRequest, reason: string): void {
    if (this.events !== request) return;
    this.events = null;
    this.token = null;
    this.leftover = null;
    request.destroy();
    const ops = [...this.ops.values()];
    this.ops.clear();
    if (ops.length && !this.closed)
      this.log.warn('upstream stream failed', {
        subgraph: this.subgraph,
        error: reason,
        streams: ops.length,
      });
    for (const op of ops) op.fail(reason);
  }

  private onData(chunk: Buffer): void {
    const buf = this.leftover ? Buffer.concat([this.leftover, chunk]) : chunk;
    this.leftover = null;
    let start = 0;
    for (;;) {
      const end = buf.indexOf(EVENT_END, start);
      if (end < 0) break;
      this.onEvent(buf.toString('utf8', start, end));
      start = end + EVENT_END.length;
    }
    if (start < buf.length) this.leftover = Buffer.from(buf.subarray(start));
  }

  private onEvent(event: string): void {
    if (event.startsWith(':')) return; // the subgraph's pings: the gateway sends its own heartbeats
    const next = event.startsWith(NEXT_PREFIX);
    if (!next && !event.startsWith(COMPLETE_PREFIX)) return;
    const data = event.slice(next ? NEXT_PREFIX.length : COMPLETE_PREFIX.length).trim();
    // graphql-sse prints `{"id":<id>,"payload":<result>}` (JSON.stringify, in that order): read the id, keep the
    // payload as text. Anything else is parsed in full.
    let id: number | undefined;
    let payload: string | undefined;
    const m = next ? /^\{"id":"([0-9]+)","payload":/.exec(data) : /^\{"id":"([0-9]+)"\}$/.exec(data);
    if (m && (!next || data.endsWith('}'))) {
      id = Number(m[1]);
      if (next) payload = data.slice(m[0].length, -1);
    } else {
      try {
        const parsed = JSON.parse(data) as { id?: unknown; payload?: unknown };
        id = typeof parsed.id === 'string' && /^[0-9]+$/.test(parsed.id) ? Number(parsed.id) : undefined;
        if (next) payload = JSON.stringify(parsed.payload);
      } catch {
        this.log.warn('unreadable event from the stream source', { subgraph: this.subgraph });
        return;
      }
    }
    const op = id === undefined ? undefined : this.ops.get(id);
    if (!op) return;
    if (next) op.next(payload!);
    else {
      this.ops.delete(id!);
      op.complete();
    }
  }
}
