/**
 * One client's stream when it is carried as an operation of the gateway's shared connection to a subgraph
 * (stream-mux.ts): writes its events to the client's response as they come, holding those that arrive before the
 * client was answered (the subgraph may send them before its answer to the POST that started them). A client that
 * cannot keep up is dropped rather than buffered without bound: it reconnects and resumes.
 */
import type { ServerResponse } from 'node:http';
import type { MuxOperation } from './stream-mux.js';
import { COMPLETE_EVENT, type StreamEvents } from './stream-relay.js';

/** Bytes waiting for a slow client before its stream is dropped. */
export const MAX_CLIENT_BACKLOG_BYTES = 4 * 1024 * 1024;

export class MuxClientStream implements MuxOperation {
  /** The operation's id on the shared connection, once the subgraph accepted it. */
  id: string | undefined;
  private held: string[] | null = [];
  private endedBeforeOpen: { failure?: string } | null = null;
  private ended = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly events: StreamEvents,
    private readonly onEnd: () => void,
  ) {
    res.on('close', () => this.end());
  }

  next(payload: string): void {
    const data = payload.includes('"errors"') ? this.events.maskErrors(payload) : payload;
    const text = `event: next\ndata: ${data}\n\n`;
    if (this.held) this.held.push(text);
    else this.write(text);
  }

  complete(): void {
    if (this.held) this.endedBeforeOpen ??= {};
    else this.finishWith(null);
  }

  fail(reason: string): void {
    if (this.held) this.endedBeforeOpen ??= { failure: reason };
    else this.finishWith(reason);
  }

  /** The client was answered 200: send what was held, and the end if it came already. */
  opened(): void {
    const held = this.held ?? [];
    this.held = null;
    // A comment first, as graphql-sse's server sends: some browsers do not take the flushed headers alone.
    this.write(':\n\n');
    for (const text of held) this.write(text);
    if (this.endedBeforeOpen) this.finishWith(this.endedBeforeOpen.failure ?? null);
  }

  /** Completes the client's stream (gateway shutdown); the operation is cancelled. */
  finish(): void {
    this.finishWith(null);
  }

  private write(text: string): void {
    if (this.ended || !this.res.writable) return;
    this.res.write(text);
    if (this.res.writableLength > MAX_CLIENT_BACKLOG_BYTES) this.res.destroy();
  }

  private finishWith(failure: string | null): void {
    if (this.ended) return;
    if (failure !== null) this.write(`event: next\ndata: ${this.events.onFailure(failure)}\n\n`);
    if (this.res.writable) this.res.end(COMPLETE_EVENT);
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.held = null;
    if (!this.res.writableEnded) this.res.end();
    this.onEnd();
  }
}
