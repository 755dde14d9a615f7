/**
 * The text/event-stream parser against vectors from the HTML standard's "event stream interpretation" (and its
 * examples), each fed whole, split at every byte, and one byte at a time: the result must not depend on chunking.
 */
import { describe, expect, it } from 'vitest';
import { EventStreamParser, type SseItem } from '../../src/index.js';

interface Vector {
  name: string;
  input: string | Uint8Array;
  events: Array<{ type: string; data: string; lastEventId?: string }>;
  comments?: string[];
  lastEventId?: string;
  retryMs?: number;
}

const VECTORS: Vector[] = [
  {
    name: 'multi-line data joined with LF (spec example: YHOO)',
    input: 'data: YHOO\ndata: +2\ndata: 10\n\n',
    events: [{ type: 'message', data: 'YHOO\n+2\n10' }],
  },
  {
    name: 'comments, ids that persist and reset (spec example: test stream)',
    input: ': test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n',
    events: [
      { type: 'message', data: 'first event', lastEventId: '1' },
      { type: 'message', data: 'second event', lastEventId: '' },
      { type: 'message', data: ' third event', lastEventId: '' },
    ],
    comments: [' test stream'],
  },
  {
    name: 'empty data fields (spec example: two events, the last line discarded)',
    input: 'data\n\ndata\ndata\n\ndata:',
    events: [
      { type: 'message', data: '' },
      { type: 'message', data: '\n' },
    ],
  },
  {
    name: 'one space after the colon is removed, not more (spec example)',
    input: 'data:test\n\ndata: test\n\n',
    events: [
      { type: 'message', data: 'test' },
      { type: 'message', data: 'test' },
    ],
  },
  {
    name: 'graphql-sse next and complete (complete has an empty data field)',
    input: 'event: next\ndata: {"data":{"n":1}}\n\nevent: complete\ndata:\n\n',
    events: [
      { type: 'next', data: '{"data":{"n":1}}' },
      { type: 'complete', data: '' },
    ],
  },
  {
    name: 'CRLF line ends',
    input: 'event: next\r\ndata: a\r\ndata: b\r\n\r\n:ping\r\n\r\n',
    events: [{ type: 'next', data: 'a\nb' }],
    comments: ['ping'],
  },
  {
    name: 'CR line ends, and CR CRLF as two line ends',
    input: 'data: a\r\rdata: b\r\r\ndata: c\n\r\n',
    events: [
      { type: 'message', data: 'a' },
      { type: 'message', data: 'b' },
      { type: 'message', data: 'c' },
    ],
  },
  {
    name: 'an event without data is not dispatched, and its type does not leak into the next one',
    input: 'event: next\n\ndata: x\n\n',
    events: [{ type: 'message', data: 'x' }],
  },
  {
    name: 'the last event id is set even when nothing is dispatched',
    input: 'id: 7\n\ndata: x\n\n',
    events: [{ type: 'message', data: 'x', lastEventId: '7' }],
    lastEventId: '7',
  },
  {
    name: 'an id holding NUL is ignored',
    input: 'id: 1\ndata: a\n\nid: 2\u0000x\ndata: b\n\n',
    events: [
      { type: 'message', data: 'a', lastEventId: '1' },
      { type: 'message', data: 'b', lastEventId: '1' },
    ],
  },
  {
    name: 'retry with digits only; other retry values and unknown fields are ignored',
    input: 'retry: 2500\nretry: 12a\nretry\nfoo: bar\ndata: x\n\n',
    events: [{ type: 'message', data: 'x' }],
    retryMs: 2500,
  },
  {
    name: 'a field name is the whole line when there is no colon; the colon splits once',
    input: 'data\ndata: a:b: c\n\n',
    events: [{ type: 'message', data: '\na:b: c' }],
  },
  {
    name: 'a leading BOM is ignored (only one), UTF-8 multi-byte characters survive any split',
    input: new Uint8Array([
      0xef,
      0xbb,
      0xbf,
      ...new TextEncoder().encode('data: caf\u00e9 \u{1F600} \u6f22\n\n'),
    ]),
    events: [{ type: 'message', data: 'caf\u00e9 \u{1F600} \u6f22' }],
  },
  {
    name: 'an unfinished event at the end of the stream is discarded',
    input: 'data: kept\n\nevent: next\ndata: lost\n',
    events: [{ type: 'message', data: 'kept' }],
  },
  {
    name: 'heartbeats only: comments, no events',
    input: ':\n\n:\n\n: keep-alive\n\n',
    events: [],
    comments: ['', '', ' keep-alive'],
  },
];

function bytesOf(input: string | Uint8Array): Uint8Array {
  return typeof input === 'string' ? new TextEncoder().encode(input) : input;
}

function run(chunks: Uint8Array[]): { items: SseItem[]; parser: EventStreamParser } {
  const parser = new EventStreamParser();
  const items: SseItem[] = [];
  for (const chunk of chunks) items.push(...parser.feed(chunk));
  items.push(...parser.end());
  return { items, parser };
}

function check(vector: Vector, chunks: Uint8Array[]): void {
  const { items, parser } = run(chunks);
  const events = items.filter((i) => i.kind === 'event');
  expect(events.map((e) => ({ type: e.type, data: e.data }))).toEqual(
    vector.events.map((e) => ({ type: e.type, data: e.data })),
  );
  vector.events.forEach((e, i) => {
    if (e.lastEventId !== undefined) expect(events[i]!.lastEventId).toBe(e.lastEventId);
  });
  if (vector.comments) {
    expect(items.filter((i) => i.kind === 'comment').map((c) => c.text)).toEqual(vector.comments);
  }
  if (vector.lastEventId !== undefined) expect(parser.lastEventId).toBe(vector.lastEventId);
  if (vector.retryMs !== undefined) expect(parser.reconnectionTimeMs).toBe(vector.retryMs);
}

describe('EventStreamParser (HTML standard, event stream interpretation)', () => {
  for (const vector of VECTORS) {
    it(`${vector.name}: whole, split at every byte, byte by byte`, () => {
      const bytes = bytesOf(vector.input);
      check(vector, [bytes]);
      for (let at = 0; at <= bytes.length; at++) check(vector, [bytes.subarray(0, at), bytes.subarray(at)]);
      check(
        vector,
        Array.from(bytes, (b) => Uint8Array.of(b)),
      );
    });
  }

  it('keeps the last event id across events until an id field changes it', () => {
    const parser = new EventStreamParser();
    const items = parser.feed(new TextEncoder().encode('id: a\ndata: 1\n\ndata: 2\n\nid:\ndata: 3\n\n'));
    expect(items.map((i) => (i.kind === 'event' ? i.lastEventId : null))).toEqual(['a', 'a', '']);
  });

  it('a second BOM is data, not ignored', () => {
    const bom = [0xef, 0xbb, 0xbf];
    const { items } = run([new Uint8Array([...bom, ...bom, ...new TextEncoder().encode('data: x\n\n')])]);
    // The second BOM starts the field name, so the line is the unknown field "\uFEFFdata" and nothing dispatches.
    expect(items).toEqual([]);
  });

  it('invalid UTF-8 becomes U+FFFD instead of failing', () => {
    const { items } = run([new Uint8Array([...new TextEncoder().encode('data: a'), 0xff, 0x0a, 0x0a])]);
    expect(items).toEqual([{ kind: 'event', type: 'message', data: 'a\ufffd', lastEventId: '' }]);
  });
});
