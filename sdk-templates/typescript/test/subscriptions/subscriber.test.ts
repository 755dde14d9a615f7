/**
 * Subscriptions over a scripted transport and a manual clock: resume after drops, dedupe and order, backoff and
 * server-requested waits, idle timeouts and heartbeats, the polling fallback and the way back, token refresh,
 * fatal refusals, verification failures as items, abort, and metadata-only statuses.
 */
import { describe, expect, it } from 'vitest';
import {
  AgentGraphClient,
  AgentGraphError,
  type AgentGraphClientOptions,
  createSubscriptions,
  decorrelatedJitterBackoffV2,
  IntentVerificationError,
  type OperationSpec,
  type SubscribeOptions,
  type SubscriptionItem,
  type SubscriptionSpec,
  type SubscriptionStatus,
} from '../../src/index.js';
import { errorTable } from '../helpers.js';
import {
  type Answer,
  drive,
  jsonResponse,
  ManualClock,
  ScriptedFetch,
  settle,
  sse,
  SseBody,
  sseResponse,
} from './harness.js';

const BASE = 'http://sdk.test/graphql';
const ROOM = 'room-7f3a';

const ROOM_MESSAGES: SubscriptionSpec = {
  name: 'RoomMessages',
  document:
    'subscription RoomMessages($roomId: ID!, $afterSeq: Int) { roomMessages(roomId: $roomId, afterSeq: $afterSeq) { seq body } }',
  kind: 'subscription',
  privacy: {},
};

const BACKLOG: OperationSpec = {
  name: 'RoomBacklog',
  document:
    'query RoomBacklog($id: ID!, $after: String) { room(id: $id) { messages(first: 100, after: $after) { edges { node { seq body } } pageInfo { hasNextPage endCursor } } } }',
  kind: 'query',
  idempotent: false,
  privacy: {},
};

interface Msg {
  seq: number;
  body: string;
}
interface StreamData {
  roomMessages: Msg;
}

const body = (seq: number) => `private body ${seq}`;
const next = (seq: number) => sse.next({ data: { roomMessages: { seq, body: body(seq) } } });
const page = (seqs: number[], hasNextPage: boolean, endCursor: string | null) =>
  jsonResponse(200, {
    data: {
      room: {
        messages: {
          edges: seqs.map((seq) => ({ node: { seq, body: body(seq) } })),
          pageInfo: { hasNextPage, endCursor },
        },
      },
    },
  });
const coded = (status: number, code: string, extra: Record<string, unknown> = {}, headers = {}) =>
  jsonResponse(
    status,
    { errors: [{ message: `${code} from the server`, extensions: { code, ...extra } }] },
    headers,
  );
const stream = (chunks: string[], end?: 'close' | 'error') => {
  const b = new SseBody(chunks, end);
  return { body: b, response: sseResponse(b) };
};

const FIRST_RETRY_DELAY = decorrelatedJitterBackoffV2(0, 200, 0, () => 0.5).delayMs;

interface Setup {
  clock: ManualClock;
  transport: ScriptedFetch;
  statuses: SubscriptionStatus[];
  logs: SubscriptionStatus[];
  tokens: { refreshes: number };
  iterator: AsyncIterator<SubscriptionItem<Msg, any>>;
  take(n: number): Promise<SubscriptionItem<Msg, any>[]>;
}

function setup(
  streams: Answer[],
  queries: Answer[] = [],
  options: Partial<SubscribeOptions<Msg, any, StreamData>> = {},
  clientOptions: Partial<AgentGraphClientOptions> = {},
  variables: Record<string, unknown> = { roomId: ROOM },
  op: SubscriptionSpec = ROOM_MESSAGES,
): Setup {
  const clock = new ManualClock();
  const transport = new ScriptedFetch(streams, queries);
  const statuses: SubscriptionStatus[] = [];
  const logs: SubscriptionStatus[] = [];
  const tokens = { refreshes: 0 };
  const tokenProvider = {
    getToken: async () => 'token-A',
    refresh: async () => {
      tokens.refreshes += 1;
      return 'token-B';
    },
  };
  const client = new AgentGraphClient({
    baseUrl: BASE,
    errorTable,
    fetch: transport.fetch,
    clock,
    random: () => 0.5,
    tokenProvider,
    capabilities: { client: { pollIntervalMs: 1000 } },
    ...clientOptions,
  });
  const subscriptions = createSubscriptions(client, {
    baseUrl: BASE,
    fetch: transport.fetch,
    clock,
    random: () => 0.5,
    tokenProvider,
    logger: { log: (entry) => logs.push(entry) },
  });
  const iterable = subscriptions.subscribe<Msg, any, StreamData>(op, variables, {
    resume: { cursorVariable: 'afterSeq', seqOf: (m) => m.seq, after: 0 },
    select: (d) => d.roomMessages,
    poll: {
      operation: BACKLOG,
      variables: ({ cursor }) => ({ id: ROOM, after: cursor ?? null }),
      select: (d: any) => ({
        events: d.room.messages.edges.map((e: { node: Msg }) => e.node),
        cursor: d.room.messages.pageInfo.endCursor,
        hasMore: d.room.messages.pageInfo.hasNextPage,
      }),
    },
    onEvent: (s) => statuses.push(s),
    ...options,
  });
  const iterator = iterable[Symbol.asyncIterator]();
  return {
    clock,
    transport,
    statuses,
    logs,
    tokens,
    iterator,
    async take(n) {
      const out: SubscriptionItem<Msg, any>[] = [];
      for (let i = 0; i < n; i++) {
        const r = await drive(iterator.next(), clock);
        if (r.done) throw new Error(`the subscription ended after ${out.length} items`);
        out.push(r.value);
      }
      return out;
    },
  };
}

const seqs = (items: SubscriptionItem<Msg, any>[]) => items.map((i) => i.seq);
const events = (statuses: SubscriptionStatus[], ...names: SubscriptionStatus['event'][]) =>
  statuses.filter((s) => names.includes(s.event));

describe('subscribe: streaming, resume and dedupe', () => {
  it('resumes after each drop from the last sequence handled, dropping duplicates and out-of-order events', async () => {
    const s3 = stream([next(4), next(5)]);
    const t = setup([
      stream([sse.heartbeat, next(1), next(2)], 'close').response,
      stream([next(2), next(3), next(1), next(4)], 'error').response,
      s3.response,
    ]);
    const items = await t.take(5);
    expect(seqs(items)).toEqual([1, 2, 3, 4, 5]);
    expect(items.map((i) => i.type === 'event' && i.event.body)).toEqual([1, 2, 3, 4, 5].map(body));
    expect(items.every((i) => i.source === 'stream')).toBe(true);

    const sent = t.transport.streamRequests;
    expect(sent.map((r) => r.url)).toEqual(Array(3).fill(`${BASE}/stream`));
    expect(sent.map((r) => r.body.variables)).toEqual([
      { roomId: ROOM, afterSeq: 0 },
      { roomId: ROOM, afterSeq: 2 },
      { roomId: ROOM, afterSeq: 4 },
    ]);
    expect(sent[0]!.body).toMatchObject({ query: ROOM_MESSAGES.document, operationName: 'RoomMessages' });
    expect(sent[0]!.headers).toMatchObject({
      authorization: 'Bearer token-A',
      accept: 'text/event-stream',
      'content-type': 'application/json',
    });
    expect(sent[1]!.headers['last-event-id']).toBeUndefined();

    const drops = events(t.statuses, 'stream-dropped');
    expect(drops.map((d) => [d.reason, d.events, d.duplicates])).toEqual([
      ['ended', 2, 0],
      ['network', 2, 2],
    ]);
    // Each stream made progress, so each reconnect waits the first backoff delay again.
    expect(events(t.statuses, 'reconnect-wait').map((w) => w.delayMs)).toEqual([
      FIRST_RETRY_DELAY,
      FIRST_RETRY_DELAY,
    ]);
    expect(t.clock.fired).toEqual([FIRST_RETRY_DELAY, FIRST_RETRY_DELAY]);

    await t.iterator.return!();
    expect(s3.body.cancelled || s3.body.aborted).toBe(true);
  });

  it('backs off with the decorrelated-jitter series while connections keep failing (no poll spec)', async () => {
    const t = setup(
      [
        new TypeError('fetch failed'),
        new TypeError('fetch failed'),
        new TypeError('fetch failed'),
        new TypeError('fetch failed'),
        stream([next(1)]).response,
      ],
      [],
      { poll: undefined },
    );
    expect(seqs(await t.take(1))).toEqual([1]);
    let prev = 0;
    const expected = [0, 1, 2, 3].map((attempt) => {
      const step = decorrelatedJitterBackoffV2(attempt, 200, prev, () => 0.5);
      prev = step.next;
      return step.delayMs;
    });
    expect(events(t.statuses, 'reconnect-wait').map((w) => [w.reason, w.delayMs, w.failures])).toEqual(
      expected.map((d, i) => ['network', d, i + 1]),
    );
    expect(events(t.statuses, 'fallback-poll')).toEqual([]);
  });

  it('sends Last-Event-ID when the server gave event ids', async () => {
    const t = setup([stream([`id: 41\n${next(1)}`], 'close').response, stream([next(2)]).response]);
    expect(seqs(await t.take(2))).toEqual([1, 2]);
    expect(t.transport.streamRequests[1]!.headers['last-event-id']).toBe('41');
  });

  it('obeys the server’s wait: Retry-After on a refusal, retryAfterMs in an error event', async () => {
    const t = setup([
      coded(503, 'SERVICE_UNAVAILABLE', {}, { 'retry-after': '2' }),
      stream([
        next(1),
        sse.next({
          errors: [
            { message: 'source went away', extensions: { code: 'SERVICE_UNAVAILABLE', retryAfterMs: 1000 } },
          ],
        }),
        sse.complete,
      ]).response,
      stream([next(2)]).response,
    ]);
    expect(seqs(await t.take(2))).toEqual([1, 2]);
    expect(events(t.statuses, 'reconnect-wait').map((w) => [w.reason, w.code, w.delayMs])).toEqual([
      ['server-error', 'SERVICE_UNAVAILABLE', 2000],
      ['server-error', 'SERVICE_UNAVAILABLE', 1000],
    ]);
    expect(t.transport.streamRequests.map((r) => r.body.variables.afterSeq)).toEqual([0, 0, 1]);
  });

  it('reconnects after `complete` by default, and ends on it with completeEnds', async () => {
    const t = setup([stream([next(1), sse.complete]).response, stream([next(2)]).response]);
    expect(seqs(await t.take(2))).toEqual([1, 2]);
    expect(events(t.statuses, 'stream-dropped')[0]!.reason).toBe('complete');

    const ends = setup([stream([next(1), sse.complete]).response], [], { completeEnds: true });
    expect(seqs(await ends.take(1))).toEqual([1]);
    expect(await drive(ends.iterator.next(), ends.clock)).toEqual({ done: true, value: undefined });
    expect(ends.transport.streamRequests).toHaveLength(1);
    expect(events(ends.statuses, 'end')[0]!.reason).toBe('complete');
  });
});

describe('subscribe: idle timeout and heartbeats', () => {
  it('heartbeats keep a quiet stream; silence for idleTimeoutMs drops it and it resumes', async () => {
    const quiet = new SseBody();
    const t = setup([sseResponse(quiet), stream([next(2)]).response], [], { idleTimeoutMs: 45_000 });
    const first = t.iterator.next();
    await settle();
    await t.clock.advance(30_000);
    quiet.push(sse.heartbeat);
    await settle();
    await t.clock.advance(30_000); // 60 s after opening, 30 s after the heartbeat
    expect(events(t.statuses, 'stream-dropped')).toEqual([]);
    quiet.push(next(1));
    expect((await first).value).toMatchObject({ seq: 1, source: 'stream' });

    const second = t.iterator.next();
    await t.clock.advance(44_999);
    expect(events(t.statuses, 'stream-dropped')).toEqual([]);
    await t.clock.advance(1);
    expect(events(t.statuses, 'stream-dropped').map((d) => [d.reason, d.latencyMs])).toEqual([
      ['idle', 105_000],
    ]);
    expect(quiet.cancelled || quiet.aborted).toBe(true);
    expect((await drive(second, t.clock)).value).toMatchObject({ seq: 2 });
    expect(t.transport.streamRequests[1]!.body.variables.afterSeq).toBe(1);
  });

  it('the consumer’s own time between items is not silence', async () => {
    const t = setup([stream([next(1)]).response], [], { idleTimeoutMs: 1_000 });
    expect(seqs(await t.take(1))).toEqual([1]);
    // The consumer works for a minute without asking for the next item: no timer runs meanwhile.
    expect(t.clock.pending()).toEqual([]);
  });
});

describe('subscribe: the polling fallback', () => {
  it('polls after N stream failures, and goes back to the stream without gap or duplicate', async () => {
    const back = stream([next(5), next(6)]);
    const t = setup(
      [
        stream([next(1), next(2)], 'close').response,
        new TypeError('fetch failed'),
        coded(503, 'SERVICE_UNAVAILABLE', { retryAfterMs: 0 }),
        back.response,
      ],
      [page([1, 2, 3], true, 'c1'), page([4], false, 'c2'), page([4, 5], false, 'c3'), page([], false, null)],
      { maxStreamFailures: 3, streamRetryMs: 2_500 },
    );
    const items = await t.take(6);
    expect(seqs(items)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(items.map((i) => i.source)).toEqual(['stream', 'stream', 'poll', 'poll', 'poll', 'stream']);

    expect(t.transport.queryRequests.map((r) => r.body.variables)).toEqual([
      { id: ROOM, after: null },
      { id: ROOM, after: 'c1' },
      { id: ROOM, after: 'c2' },
      { id: ROOM, after: 'c3' },
    ]);
    expect(t.transport.queryRequests[0]!.body.operationName).toBe('RoomBacklog');
    expect(t.transport.streamRequests[3]!.body.variables.afterSeq).toBe(5);

    const flow = events(
      t.statuses,
      'stream-open',
      'stream-dropped',
      'reconnect-wait',
      'fallback-poll',
      'poll',
      'stream-restored',
    ).map((s) => [s.event, s.mode, s.reason ?? s.events ?? null]);
    expect(flow).toEqual([
      ['stream-open', 'stream', null],
      ['stream-dropped', 'stream', 'ended'],
      ['reconnect-wait', 'stream', 'ended'],
      ['reconnect-wait', 'stream', 'network'],
      ['fallback-poll', 'poll', 'failures'],
      ['poll', 'poll', 2],
      ['poll', 'poll', 1],
      ['poll', 'poll', 0],
      ['stream-restored', 'stream', null],
      ['stream-open', 'stream', null],
    ]);
    // Polls every pollIntervalMs from capabilities (1 s); the stream is tried again once 2.5 s have passed.
    expect(t.clock.fired.filter((ms) => ms === 1000)).toHaveLength(3);
  });

  it('falls back at once when the server does not stream (404 without GraphQL errors)', async () => {
    const t = setup([new Response(null, { status: 404 })], [page([1, 2], false, 'c1')]);
    const items = await t.take(2);
    expect(seqs(items)).toEqual([1, 2]);
    expect(items.map((i) => i.source)).toEqual(['poll', 'poll']);
    expect(events(t.statuses, 'fallback-poll').map((s) => s.reason)).toEqual(['streams-off']);
  });

  it('treats a 2xx that is not an event stream as streams off', async () => {
    const t = setup([jsonResponse(200, { data: null })], [page([1], false, 'c1')]);
    expect(seqs(await t.take(1))).toEqual([1]);
    expect(events(t.statuses, 'fallback-poll').map((s) => s.reason)).toEqual(['streams-off']);
  });

  it('without a poll spec, streams off ends the subscription with a clear error', async () => {
    const t = setup([new Response(null, { status: 404 })], [], { poll: undefined });
    const error = await drive(t.iterator.next(), t.clock).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NOT_FOUND', status: 404, retryable: false });
    expect((error as Error).message).toContain('streams are off');
  });

  it('a subscription without a start takes its position from the first poll round', async () => {
    const t = setup(
      [new Response(null, { status: 405 }), ...Array(5).fill(new Response(null, { status: 405 }))],
      [page([1, 2, 3], false, 'c1'), page([3, 4], false, 'c2')],
      { resume: { cursorVariable: 'afterSeq', seqOf: (m: Msg) => m.seq } },
    );
    expect(t.transport.streamRequests).toHaveLength(0);
    const items = await t.take(1);
    expect(seqs(items)).toEqual([4]);
    expect(t.transport.streamRequests[0]!.body.variables).toEqual({ roomId: ROOM });
  });

  it('from an empty log, the first poll round positions before the first event', async () => {
    const t = setup([new Response(null, { status: 404 })], [page([], false, null), page([1], false, 'c1')], {
      resume: { cursorVariable: 'afterSeq', seqOf: (m: Msg) => m.seq },
    });
    expect(seqs(await t.take(1))).toEqual([1]);
  });

  it('a retryable poll failure waits for the next round; a refusal ends the subscription', async () => {
    const t = setup(
      [new Response(null, { status: 404 })],
      [coded(503, 'SERVICE_UNAVAILABLE'), page([1], false, 'c1'), coded(403, 'FORBIDDEN')],
      {},
      { retry: { maxAttempts: 1 } },
    );
    expect(seqs(await t.take(1))).toEqual([1]);
    expect(events(t.statuses, 'poll-failed').map((s) => [s.code, s.status])).toEqual([
      ['SERVICE_UNAVAILABLE', 503],
    ]);
    await expect(drive(t.iterator.next(), t.clock)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});

describe('subscribe: auth and refusals', () => {
  it('refreshes the token once on UNAUTHENTICATED and reconnects at once', async () => {
    const t = setup([coded(401, 'UNAUTHENTICATED'), stream([next(1)]).response]);
    expect(seqs(await t.take(1))).toEqual([1]);
    expect(t.tokens.refreshes).toBe(1);
    expect(t.transport.streamRequests.map((r) => r.headers.authorization)).toEqual([
      'Bearer token-A',
      'Bearer token-B',
    ]);
    expect(t.clock.fired).toEqual([]);
  });

  it('UNAUTHENTICATED again after the refresh ends the subscription with the typed error', async () => {
    const t = setup([coded(401, 'UNAUTHENTICATED'), coded(401, 'UNAUTHENTICATED')]);
    const error = await drive(t.iterator.next(), t.clock).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentGraphError);
    expect(error).toMatchObject({ code: 'UNAUTHENTICATED', name: 'UnauthenticatedError' });
    expect(t.tokens.refreshes).toBe(1);
  });

  it('a refusal inside the stream (NOT_FOUND) ends the subscription with that code', async () => {
    const t = setup([
      stream([
        sse.next({ errors: [{ message: 'No such room.', extensions: { code: 'NOT_FOUND' } }] }),
        sse.complete,
      ]).response,
    ]);
    await expect(drive(t.iterator.next(), t.clock)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      name: 'NotFoundError',
      message: 'No such room.',
    });
    expect(t.transport.streamRequests).toHaveLength(1);
    expect(events(t.statuses, 'end').map((s) => s.code)).toEqual(['NOT_FOUND']);
  });

  it('the privacy gate refuses before any request', async () => {
    const op: SubscriptionSpec = { ...ROOM_MESSAGES, privacy: { note: { class: 'SECRET', required: true } } };
    const t = setup([], [], {}, {}, { roomId: ROOM, note: 'x' }, op);
    await expect(drive(t.iterator.next(), t.clock)).rejects.toMatchObject({ code: 'PRIVACY_REFUSED' });
    expect(t.transport.streamRequests).toHaveLength(0);
  });

  it('checks its arguments', () => {
    const client = new AgentGraphClient({ baseUrl: BASE, errorTable });
    const subscriptions = createSubscriptions(client, { baseUrl: BASE });
    expect(() =>
      subscriptions.subscribe(
        { ...ROOM_MESSAGES, kind: 'query' as 'subscription' },
        {},
        {
          resume: { cursorVariable: 'afterSeq', seqOf: () => 1 },
        },
      ),
    ).toThrow(/not a subscription/);
    expect(() => subscriptions.subscribe(ROOM_MESSAGES, {}, {} as SubscribeOptions<Msg>)).toThrow(/resume/);
  });

  it("defaults to the client's endpoint, fetch, headers, clock, privacy policy and token provider", async () => {
    const clock = new ManualClock();
    const transport = new ScriptedFetch([stream([next(1)], 'close').response, stream([next(2)]).response]);
    let issued = 0;
    const client = new AgentGraphClient({
      baseUrl: BASE,
      errorTable,
      fetch: transport.fetch,
      clock,
      random: () => 0.5,
      headers: { 'x-app': 'console' },
      tokenProvider: { getToken: async () => `token-${++issued}`, refresh: async () => 'refreshed' },
      privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
    });
    const op: SubscriptionSpec = {
      ...ROOM_MESSAGES,
      privacy: { note: { class: 'PERSONAL', required: false } },
    };
    const iterable = createSubscriptions(client).subscribe<Msg, undefined, StreamData>(
      op,
      { roomId: ROOM, note: 'hello' },
      { resume: { cursorVariable: 'afterSeq', seqOf: (m) => m.seq }, select: (d) => d.roomMessages },
    );
    const iterator = iterable[Symbol.asyncIterator]();
    expect((await drive(iterator.next(), clock)).value).toMatchObject({ seq: 1 });
    expect((await drive(iterator.next(), clock)).value).toMatchObject({ seq: 2 }); // after a reconnect
    await iterator.return?.();
    expect(transport.streamRequests.map((r) => r.url)).toEqual([`${BASE}/stream`, `${BASE}/stream`]);
    // A fresh token from the client's provider on every (re)connect, the client's headers, its policy (PERSONAL sent).
    expect(transport.streamRequests.map((r) => r.headers['authorization'])).toEqual([
      'Bearer token-1',
      'Bearer token-2',
    ]);
    expect(transport.streamRequests.map((r) => r.headers['x-app'])).toEqual(['console', 'console']);
    expect(transport.streamRequests[0]!.body).toMatchObject({ variables: { roomId: ROOM, note: 'hello' } });
    expect(transport.streamRequests[1]!.body).toMatchObject({ variables: { afterSeq: 1 } });
    // An explicit token provider still wins.
    const own = new ScriptedFetch([stream([next(1)]).response]);
    const explicitIterable = createSubscriptions(client, {
      fetch: own.fetch,
      tokenProvider: { getToken: async () => 'explicit', refresh: async () => 'explicit' },
    }).subscribe<Msg, undefined, StreamData>(
      ROOM_MESSAGES,
      { roomId: ROOM },
      { resume: { cursorVariable: 'afterSeq', seqOf: (m) => m.seq }, select: (d) => d.roomMessages },
    );
    const explicit = explicitIterable[Symbol.asyncIterator]();
    expect((await drive(explicit.next(), clock)).value).toMatchObject({ seq: 1 });
    await explicit.return?.();
    expect(own.streamRequests[0]!.headers['authorization']).toBe('Bearer explicit');
  });
});

describe('subscribe: verification', () => {
  it('yields failed verifications as rejected items and keeps streaming', async () => {
    const t = setup([stream([next(1), next(2), next(3), next(4)]).response], [], {
      verify: (m: Msg) => {
        if (m.seq === 2)
          throw new IntentVerificationError('FORGED_SIGNATURE', 'the signature does not verify.');
        if (m.seq === 3) throw new Error('policy said no');
        return { checked: m.seq };
      },
    });
    const items = await t.take(4);
    expect(items.map((i) => [i.type, i.seq, i.type === 'event' ? i.verified : i.error.code])).toEqual([
      ['event', 1, { checked: 1 }],
      ['rejected', 2, 'INTENT_FORGED_SIGNATURE'],
      ['rejected', 3, 'VERIFICATION_FAILED'],
      ['event', 4, { checked: 4 }],
    ]);
    expect(t.transport.streamRequests).toHaveLength(1);
    expect(events(t.statuses, 'rejected').map((s) => [s.seq, s.code])).toEqual([
      [2, 'INTENT_FORGED_SIGNATURE'],
      [3, 'VERIFICATION_FAILED'],
    ]);
  });
});

describe('subscribe: stopping', () => {
  it('aborting the signal ends the iteration with AbortError and aborts the stream request', async () => {
    const open = new SseBody();
    const controller = new AbortController();
    const t = setup([sseResponse(open)], [], { signal: controller.signal });
    const pending = t.iterator.next();
    await settle();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(open.aborted).toBe(true);
  });

  it('aborting during a reconnect wait stops at once, with no further request', async () => {
    const controller = new AbortController();
    const t = setup([new TypeError('fetch failed')], [], { signal: controller.signal });
    const pending = t.iterator.next();
    await settle();
    expect(t.clock.pending()).toEqual([FIRST_RETRY_DELAY]);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(t.transport.streamRequests).toHaveLength(1);
  });

  it('breaking out of for-await closes the stream', async () => {
    const open = stream([next(1)]);
    const t = setup([open.response]);
    for await (const item of { [Symbol.asyncIterator]: () => t.iterator }) {
      expect(item.seq).toBe(1);
      break;
    }
    expect(open.body.cancelled || open.body.aborted).toBe(true);
  });
});

describe('subscribe: logs', () => {
  it('logs metadata only: no token, variables or payloads', async () => {
    const t = setup(
      [
        stream([next(1)], 'close').response,
        coded(401, 'UNAUTHENTICATED'),
        new TypeError('fetch failed'),
        new TypeError('fetch failed'),
        stream([next(3)]).response,
      ],
      [page([1, 2], false, 'cursor-secret')],
      { maxStreamFailures: 3, streamRetryMs: 1 },
    );
    expect(seqs(await t.take(3))).toEqual([1, 2, 3]);
    expect(t.logs).toEqual(t.statuses);
    const text = JSON.stringify(t.logs);
    for (const secret of ['token-A', 'token-B', ROOM, 'private body', 'cursor-secret', 'RoomBacklog']) {
      expect(text).not.toContain(secret);
    }
    expect(new Set(t.logs.map((l) => l.operation))).toEqual(new Set(['RoomMessages']));
  });
});
