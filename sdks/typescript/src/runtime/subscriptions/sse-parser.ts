/**
 * The `text/event-stream` parser, exactly as the HTML standard's "event stream interpretation"
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
 *
 * - the bytes are UTF-8 (one leading BOM ignored; invalid bytes become U+FFFD), decoded across chunk boundaries;
 * - lines end with CRLF, LF or CR (a CR at the end of one chunk and an LF at the start of the next are one line end);
 * - an empty line dispatches the event; a line starting with `:` is a comment (reported here as a heartbeat);
 * - `field:value` (one space after the colon removed), or a whole line as the field with an empty value;
 * - `event` sets the type, `data` appends the value and a LF, `id` sets the last event id unless the value holds
 *   U+0000, `retry` (ASCII digits only) sets the reconnection time; any other field is ignored;
 * - dispatch: the last event id is set (even when nothing is dispatched); with an empty data buffer nothing is
 *   dispatched; one trailing LF is removed from the data; the type defaults to `message`; data and type reset;
 * - at the end of the stream an unfinished event (no empty line after it) is discarded.
 *
 * Browser-safe: TextDecoder only.
 */

export interface SseEvent {
  kind: 'event';
  /** The `event` field, or `message`. */
  type: string;
  data: string;
  /** The last event id after this event's `id` field (ids persist across events; an empty `id` clears it). */
  lastEventId: string;
}

export interface SseComment {
  kind: 'comment';
  /** The text after the colon (a heartbeat is usually empty). */
  text: string;
}

export type SseItem = SseEvent | SseComment;

export class EventStreamParser {
  private readonly decoder = new TextDecoder('utf-8');
  /** Text of the line being read (no line end yet). */
  private line = '';
  /** The previous character was a CR: a LF right after it belongs to the same line end. */
  private afterCR = false;
  private data = '';
  private type = '';
  private lastEventIdBuffer = '';
  private lastEventIdValue = '';
  private retryMs: number | undefined;

  /** The last event id (for a reconnect's `Last-Event-ID`); '' when none. */
  get lastEventId(): string {
    return this.lastEventIdValue;
  }

  /** The server's reconnection time from the last valid `retry` field, if any. */
  get reconnectionTimeMs(): number | undefined {
    return this.retryMs;
  }

  /** Feeds bytes of the response body; returns what they completed. */
  feed(bytes: Uint8Array): SseItem[] {
    return this.feedText(this.decoder.decode(bytes, { stream: true }));
  }

  /** The body ended: flushes the decoder and discards an unfinished event. */
  end(): SseItem[] {
    const out = this.feedText(this.decoder.decode());
    // A last line without a line end is not a line: it and any pending event are discarded.
    this.line = '';
    this.data = '';
    this.type = '';
    return out;
  }

  /** Feeds already-decoded text (the BOM, if any, must already be gone). */
  feedText(text: string): SseItem[] {
    const out: SseItem[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      if (c === 0x0a && this.afterCR && i === start && this.line === '') {
        // The LF of a CRLF whose CR ended the previous line (possibly in the previous chunk).
        this.afterCR = false;
        start = i + 1;
        continue;
      }
      this.processLine(this.line + text.slice(start, i), out);
      this.line = '';
      this.afterCR = c === 0x0d;
      start = i + 1;
    }
    if (start < text.length) {
      this.line += text.slice(start);
      this.afterCR = false;
    }
    return out;
  }

  private processLine(line: string, out: SseItem[]): void {
    if (line === '') {
      this.dispatch(out);
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) {
      out.push({ kind: 'comment', text: line.slice(1) });
      return;
    }
    let field: string;
    let value: string;
    if (colon > 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
    } else {
      field = line;
      value = '';
    }
    switch (field) {
      case 'event':
        this.type = value;
        break;
      case 'data':
        this.data += `${value}\n`;
        break;
      case 'id':
        if (!value.includes('\u0000')) this.lastEventIdBuffer = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break;
    }
  }

  private dispatch(out: SseItem[]): void {
    this.lastEventIdValue = this.lastEventIdBuffer;
    if (this.data === '') {
      this.type = '';
      return;
    }
    const data = this.data.endsWith('\n') ? this.data.slice(0, -1) : this.data;
    out.push({ kind: 'event', type: this.type || 'message', data, lastEventId: this.lastEventIdValue });
    this.data = '';
    this.type = '';
  }
}
