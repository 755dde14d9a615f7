/**
 * Subscriptions against the real platform (gateway /graphql/stream → coordination, PGlite or PostgreSQL) through
 * the fault proxy: streams cut after every event, then the stream path blocked (polling takes over), then unblocked
 * (streaming again). Every message arrives exactly once, in order, and each phase uses the transport it should.
 * No sleeps: the test waits for what the subscription reports.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFaultProxy, mulberry32, type FaultProxy } from '../../../../test/fault-proxy/src/index.js';
import { startTestPlatform, type TestPlatform, type TestUser } from '../../../../test/src/platform.js';
import {
  AgentGraphClient,
  createSubscriptions,
  type OperationSpec,
  type SubscriptionItem,
  type SubscriptionSpec,
  type SubscriptionStatus,
} from '../../src/index.js';
import { errorTable } from '../helpers.js';

const ROOM_MESSAGES: SubscriptionSpec = {
  name: 'RoomMessages',
  document:
    'subscription RoomMessages($roomId: ID!, $afterSeq: Int) { roomMessages(roomId: $roomId, afterSeq: $afterSeq) { seq body } }',
  kind: 'subscription',
  privacy: {},
};

const ROOM_BACKLOG: OperationSpec = {
  name: 'RoomBacklog',
  document:
    'query RoomBacklog($id: ID!, $after: String) { room(id: $id) { messages(first: 50, after: $after) { edges { node { seq body } } pageInfo { hasNextPage endCursor } } } }',
  kind: 'query',
  idempotent: false,
  privacy: {},
};

interface Msg {
  seq: number;
  body: string;
}

let p: TestPlatform;
let proxy: FaultProxy;
let user: TestUser;

beforeAll(async () => {
  p = await startTestPlatform({ CLIENT_POLL_INTERVAL_MS: '100' });
  user = await p.tokenFor({ tenant: 'sdk-subscriptions' });
  // Queries and mutations on /graphql always pass; random faults hit only the stream path.
  proxy = await startFaultProxy({
    upstream: p.gatewayUrl,
    seed: 2026,
    rules: [{ name: 'queries', match: { path: '/graphql' }, action: { type: 'pass' } }],
  });
});
afterAll(async () => {
  await proxy?.close();
  await p?.close();
});

async function createRoom(): Promise<string> {
  const r = await p.gql(
    'mutation R($n: String!, $k: ID!) { createRoom(input: { name: $n }, idempotencyKey: $k) { room { id } } }',
    { n: 'sdk-stream', k: randomUUID() },
    user.token,
  );
  expect(r.errors).toBeUndefined();
  return r.data.createRoom.room.id as string;
}

async function post(room: string, body: string): Promise<number> {
  const r = await p.gql(
    'mutation P($r: ID!, $b: String!, $k: ID!) { postMessage(roomId: $r, input: { body: $b }, idempotencyKey: $k) { message { seq } } }',
    { r: room, b: body, k: randomUUID() },
    user.token,
  );
  expect(r.errors).toBeUndefined();
  return r.data.postMessage.message.seq as number;
}

/** What the subscription reported so far, and a way to wait until a condition holds. */
class Observed {
  readonly items: SubscriptionItem<Msg>[] = [];
  readonly statuses: SubscriptionStatus[] = [];
  failure: unknown;
  private waiters: Array<{ check: () => boolean; resolve: () => void; reject: (e: unknown) => void }> = [];

  notify(): void {
    for (const w of [...this.waiters]) {
      if (this.failure !== undefined) w.reject(this.failure);
      else if (w.check()) w.resolve();
      else continue;
      this.waiters = this.waiters.filter((x) => x !== w);
    }
  }

  until(check: () => boolean): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ check, resolve, reject }));
  }

  has(seq: number): boolean {
    return this.items.some((i) => i.seq === seq);
  }

  count(event: SubscriptionStatus['event']): number {
    return this.statuses.filter((s) => s.event === event).length;
  }
}

it('delivers every message exactly once, in order, through cut streams, blocked streams (polling) and back', async () => {
  const room = await createRoom();
  const baseUrl = `${proxy.url}/graphql`;
  const tokenProvider = { getToken: async () => user.token, refresh: async () => user.token };
  const client = new AgentGraphClient({ baseUrl, errorTable, tokenProvider, retry: { baseDelayMs: 20 } });
  await client.refreshCapabilities();
  expect(client.settings.pollIntervalMs).toBe(100);
  const subscriptions = createSubscriptions(client, { baseUrl, tokenProvider, random: mulberry32(7) });

  const seen = new Observed();
  const controller = new AbortController();
  const subscription = subscriptions.subscribe<Msg, undefined, { roomMessages: Msg }>(
    ROOM_MESSAGES,
    { roomId: room },
    {
      resume: { cursorVariable: 'afterSeq', seqOf: (m) => m.seq, after: 0 },
      select: (d) => d.roomMessages,
      poll: {
        operation: ROOM_BACKLOG,
        variables: ({ cursor }) => ({ id: room, after: cursor ?? null }),
        select: (d: { room: { messages: any } }) => ({
          events: d.room.messages.edges.map((e: { node: Msg }) => e.node),
          cursor: d.room.messages.pageInfo.endCursor,
          hasMore: d.room.messages.pageInfo.hasNextPage,
        }),
      },
      maxStreamFailures: 3,
      streamRetryMs: 500,
      signal: controller.signal,
      onEvent: (s) => {
        seen.statuses.push(s);
        seen.notify();
      },
    },
  );
  const consuming = (async () => {
    for await (const item of subscription) {
      seen.items.push(item);
      seen.notify();
    }
  })().catch((err: unknown) => {
    seen.failure = err;
    seen.notify();
  });

  const bodies = new Map<number, string>();
  const postAll = async (from: number, to: number) => {
    for (let n = from; n <= to; n++) {
      const body = `message ${n} ${randomUUID()}`;
      expect(await post(room, body)).toBe(n);
      bodies.set(n, body);
    }
  };

  // 1. Every stream is cut right after its first event: each message comes over a new connection.
  proxy.setFaults({ cutStream: { probability: 1, afterEvents: 1 } });
  await postAll(1, 12);
  await seen.until(() => seen.has(12));
  await postAll(13, 15); // live, while connections keep being cut
  await seen.until(() => seen.has(15));
  expect(proxy.stats().streamsCut).toBeGreaterThanOrEqual(15);
  await seen.until(() => seen.count('stream-dropped') >= 15); // the 15th connection is cut too
  expect(seen.count('fallback-poll')).toBe(0);
  expect(seen.items.every((i) => i.source === 'stream')).toBe(true);

  // 2. The stream path is blocked (503 on every new stream); the open stream is cut after its next event.
  proxy.setFaults({ unavailable: 1, retryAfterSeconds: 0 });
  await postAll(16, 16);
  await seen.until(() => seen.has(16) && seen.count('fallback-poll') === 1);
  const polledFrom = seen.items.length;
  await postAll(17, 20);
  await seen.until(() => seen.has(20));
  expect(seen.items.slice(polledFrom).map((i) => [i.seq, i.source])).toEqual(
    [17, 18, 19, 20].map((n) => [n, 'poll']),
  );
  // At least the last two of the three failures in a row were the proxy's 503s.
  expect(proxy.stats().unavailable).toBeGreaterThanOrEqual(2);
  expect(seen.statuses.find((s) => s.event === 'fallback-poll')).toMatchObject({
    reason: 'failures',
    code: 'SERVICE_UNAVAILABLE',
  });

  // 3. Unblocked: the next stream probe succeeds and streaming takes over again.
  proxy.setFaults({});
  await seen.until(() => seen.count('stream-restored') === 1);
  const streamedFrom = seen.items.length;
  await postAll(21, 25);
  await seen.until(() => seen.has(25));
  expect(seen.items.slice(streamedFrom).map((i) => [i.seq, i.source])).toEqual(
    [21, 22, 23, 24, 25].map((n) => [n, 'stream']),
  );

  // Exactly once, in order, with the bodies that were posted.
  expect(seen.items.map((i) => i.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  expect(seen.items.map((i) => (i.type === 'event' ? i.event.body : null))).toEqual(
    Array.from({ length: 25 }, (_, i) => bodies.get(i + 1)),
  );

  controller.abort();
  await consuming;
  expect(seen.failure).toMatchObject({ name: 'AbortError' });
  expect(p.errorLogs).toEqual([]);
});
