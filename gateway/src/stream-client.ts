/**
 * One client's stream when it is carried as an operation of the gateway's shared connection to a subgraph
 * (stream-mux.ts): writes its events to the client's response as they come, holding those that arrive before the
 * client was answered (the subgraph may send them before its answer to the POST that started them). A client that
 * cannot keep up is dropped rather than buffered without bound: it reconnects and resumes.
 *
 * Kept small, because a gateway holds thousands of idle ones: one object per stream, no closure of its own (what
 * every stream shares is in its `ClientStreamHost`; the response's `close` listener is one shared function).
 */
import type { ServerResponse } from 'node:http';
import type { MuxOperation } from './stream-mux.js';
import { COMPLETE_EVENT, type OpenStream } from './stream-relay.js';

/** Bytes waiting for a slow client before its stream is dropped. */
export const MAX_CLIENT_BACKLOG_BYTES = 4 * 1024 * 1024;

/** Told once when an open stream is over. An object with a method, so a caller keeps no closure per stream. */
export interface StreamEndListener {
  /** `reason`: completed, failed (the source went away) or closed (the client left). */
  streamEnded(reason?: string): void;
}

/** What the client streams of one handler share (one object for all of them). */
export interface ClientStreamHost {
  /** Rewrites the data of a `next` event that holds errors (JSON text in, JSON text out) for one client. */
  maskErrors(data: string, correlationId: string): string;
  /** The `next` event data telling a client that the connection to the subgraph broke. */
  failureEvent(reason: string, correlationId: string): string;
  /** Called once per stream, when it is over (either side closed, completed, `finish()`, or never opened). */
  ended(stream: MuxClientStream): void;
}

/** The stream's phase: not answered yet (events are held), open, ended. */
const PENDING = 0;
const OPEN = 1;
const ENDED = 2;

/** The stream a response carries, for the shared `close` listener. */
const STREAM = Symbol('muxClientStream');
type Carrier = ServerResponse & { [STREAM]?: MuxClientStream };

function onResponseClose(this: Carrier): void {
  this[STREAM]?.end();
}

export class MuxClientStream implements MuxOperation, OpenStream {
  /** The operation's id on the shared connection, once the subgraph accepted it. */
  id: number | undefined = undefined;
  private phase: typeof PENDING | typeof OPEN | typeof ENDED = PENDING;
  /** Events that came before the client was answered. */
  private held: string[] | null = null;
  /** The end that came before the client was answered: `null` completed, a string the failure's reason. */
  private endedBeforeOpen: string | null | undefined = undefined;
  /** The opener's end callback (gateway.ts: the request's log line), called after `host.ended`; only once opened. */
  private onEnd: StreamEndListener | undefined = undefined;

  constructor(
    readonly res: ServerResponse,
    readonly correlationId: string,
    private readonly host: ClientStreamHost,
  ) {
    (res as Carrier)[STREAM] = this;
    res.on('close', onResponseClose);
  }

  next(payload: string): void {
    const data = payload.includes('"errors"') ? this.host.maskErrors(payload, this.correlationId) : payload;
    const text = `event: next\ndata: ${data}\n\n`;
    if (this.phase === PENDING) (this.held ??= []).push(text);
    else this.write(text);
  }

  complete(): void {
    this.endWith(null);
  }

  fail(reason: string): void {
    this.endWith(reason);
  }

  /** The operation ended (`null` completed, else the failure's reason): now, or once the client was answered. */
  private endWith(failure: string | null): void {
    if (this.phase !== PENDING) this.finishWith(failure);
    else if (this.endedBeforeOpen === undefined) this.endedBeforeOpen = failure;
  }

  /**
   * The client was answered 200: send what was held, and the end if it came already (then `onEnd` is called before
   * this returns).
   */
  opened(onEnd?: StreamEndListener): void {
    if (this.phase !== PENDING) return;
    this.phase = OPEN;
    this.onEnd = onEnd;
    const held = this.held;
    this.held = null;
    // A comment first, as graphql-sse's server sends: some browsers do not take the flushed headers alone.
    this.write(':\n\n');
    if (held) for (const text of held) this.write(text);
    if (this.endedBeforeOpen !== undefined) this.finishWith(this.endedBeforeOpen);
  }

  /** Completes the client's stream (gateway shutdown); the operation is cancelled. */
  finish(): void {
    this.finishWith(null);
  }

  private write(text: string): void {
    if (this.phase === ENDED || !this.res.writable) return;
    this.res.write(text);
    if (this.res.writableLength > MAX_CLIENT_BACKLOG_BYTES) this.res.destroy();
  }

  private finishWith(failure: string | null): void {
    if (this.phase === ENDED) return;
    if (failure !== null)
      this.write(`event: next\ndata: ${this.host.failureEvent(failure, this.correlationId)}\n\n`);
    if (this.res.writable) this.res.end(COMPLETE_EVENT);
    this.end(failure === null ? 'completed' : 'failed');
  }

  /** The stream is over: called once, whichever side ended it (without a reason: the client's response closed). */
  end(reason = 'closed'): void {
    if (this.phase === ENDED) return;
    this.phase = ENDED;
    this.held = null;
    this.res.off('close', onResponseClose);
    (this.res as Carrier)[STREAM] = undefined;
    if (!this.res.writableEnded) this.res.end();
    this.host.ended(this);
    this.onEnd?.streamEnded(reason);
  }
}
