/**
 * Finds where to cut a server-sent-event stream: after N complete events or after N bytes. An event is a block
 * (ended by a blank line) with at least one field; comment-only blocks such as `:\n\n` heartbeats are not events.
 * Line ends are LF, CRLF or CR, as in the SSE specification.
 */
import type { CutPoint } from './decide.js';

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;

export interface CutStep {
  /** The part of the chunk to send. */
  send: Buffer;
  /** True when the stream must be cut after sending `send`. */
  cut: boolean;
}

export class StreamCutter {
  private bytes = 0;
  private events = 0;
  private lineLength = 0;
  private lineIsComment = false;
  private blockHasField = false;
  private previousWasCR = false;

  constructor(private readonly point: CutPoint) {}

  /** True when the stream must be cut before any body byte (after 0 events or 0 bytes). */
  get cutAtStart(): boolean {
    return this.point.afterEvents === 0 || this.point.afterBytes === 0;
  }

  feed(chunk: Buffer): CutStep {
    if (this.point.afterBytes !== undefined) {
      const room = this.point.afterBytes - this.bytes;
      if (chunk.length < room) {
        this.bytes += chunk.length;
        return { send: chunk, cut: false };
      }
      this.bytes += room;
      return { send: chunk.subarray(0, room), cut: true };
    }
    const wanted = this.point.afterEvents ?? Infinity;
    for (let i = 0; i < chunk.length; i++) {
      if (this.scan(chunk[i]!) && this.events >= wanted) {
        // A CRLF blank line: send its LF too when it is already here.
        const end = chunk[i] === CR && chunk[i + 1] === LF ? i + 2 : i + 1;
        this.bytes += end;
        return { send: chunk.subarray(0, end), cut: true };
      }
    }
    this.bytes += chunk.length;
    return { send: chunk, cut: false };
  }

  /** Consumes one byte; true when it completed an event. */
  private scan(byte: number): boolean {
    const afterCR = this.previousWasCR;
    this.previousWasCR = byte === CR;
    if (byte === LF && afterCR) return false; // second half of CRLF
    if (byte !== LF && byte !== CR) {
      if (this.lineLength === 0) this.lineIsComment = byte === COLON;
      this.lineLength++;
      return false;
    }
    if (this.lineLength > 0) {
      if (!this.lineIsComment) this.blockHasField = true;
      this.lineLength = 0;
      return false;
    }
    if (!this.blockHasField) return false;
    this.blockHasField = false;
    this.events++;
    return true;
  }
}
