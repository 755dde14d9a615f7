/** Subscriptions through the gateway's /graphql/stream (graphql-sse), forwarded to the coordination subgraph. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';
import { subscribe } from '../src/sse.js';

let p: TestPlatform;
let alice: TestUser;

beforeAll(async () => {
  p = await startTestPlatform();
  alice = await p.tokenFor({ tenant: 'streams' });
});
afterAll(async () => {
  await p?.close();
});

const STREAM =
  'subscription S($room: ID!, $after: Int) { roomMessages(roomId: $room, afterSeq: $after) { seq body author { id } room { id name } } }';

async function createRoom(platform: TestPlatform, user: TestUser, name = 'live'): Promise<string> {
  const r = await platform.gql(
    'mutation R($n: String!, $k: ID!) { createRoom(input: { name: $n }, idempotencyKey: $k) { room { id } } }',
    { n: name, k: randomUUID() },
    user.token,
  );
  expect(r.errors).toBeUndefined();
  return r.data.createRoom.room.id as string;
}

async function post(platform: TestPlatform, user: TestUser, room: string, body: string): Promise<number> {
  const r = await platform.gql(
    'mutation P($r: ID!, $b: String!, $k: ID!) { postMessage(roomId: $r, input: { body: $b }, idempotencyKey: $k) { message { seq } } }',
    { r: room, b: body, k: randomUUID() },
    user.token,
  );
  expect(r.errors).toBeUndefined();
  return r.data.postMessage.message.seq as number;
}

type Event = {
  roomMessages: { seq: number; body: string; author: { id: string }; room: { id: string; name: string } };
};

describe('subscriptions through the gateway', () => {
  it.each([
    ['distinct connections', false],
    ['single connection (a PUT reservation, then one event stream)', true],
  ])(
    'delivers the backlog after afterSeq, then live messages, in order (graphql-sse %s)',
    async (_mode, single) => {
      const room = await createRoom(p, alice);
      await post(p, alice, room, 'one');
      await post(p, alice, room, 'two');
      const s = subscribe<Event>(
        `${p.gatewayUrl}/graphql/stream`,
        alice.token,
        STREAM,
        { room, after: 0 },
        { singleConnection: single },
      );
      try {
        const backlog = [await s.next(), await s.next()];
        expect(backlog.map((e) => e.data?.roomMessages.seq)).toEqual([1, 2]);
        expect(backlog[0]!.data?.roomMessages).toEqual({
          seq: 1,
          body: 'one',
          author: { id: alice.userId },
          room: { id: room, name: 'live' },
        });
        // The subgraph listens before it reads the backlog, so anything posted now arrives live.
        await post(p, alice, room, 'three');
        await post(p, alice, room, 'four');
        const live = [await s.next(), await s.next()];
        expect(live.map((e) => [e.data?.roomMessages.seq, e.data?.roomMessages.body])).toEqual([
          [3, 'three'],
          [4, 'four'],
        ]);
      } finally {
        s.dispose();
      }
    },
  );

  it('resumes after a given seq without gaps or duplicates', async () => {
    const room = await createRoom(p, alice, 'resume');
    for (const b of ['a', 'b', 'c']) await post(p, alice, room, b);
    const s = subscribe<Event>(`${p.gatewayUrl}/graphql/stream`, alice.token, STREAM, { room, after: 2 });
    try {
      expect((await s.next()).data?.roomMessages.seq).toBe(3);
      await post(p, alice, room, 'd');
      expect((await s.next()).data?.roomMessages.seq).toBe(4);
    } finally {
      s.dispose();
    }
  });

  it('says which fields to fetch with a query when the subscription selects fields of another subgraph', async () => {
    const room = await createRoom(p, alice, 'wide');
    const res = await fetch(`${p.gatewayUrl}/graphql/stream`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        authorization: `Bearer ${alice.token}`,
      },
      body: JSON.stringify({
        query: 'subscription S($r: ID!) { roomMessages(roomId: $r) { seq author { displayName email } } }',
        variables: { r: room },
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(body.errors[0].message).toContain('coordination');
    expect(body.errors[0].message).toContain('displayName');
    expect(body.errors[0].message).toContain('query on /graphql');
  });

  it('refuses a stream without a token (401) and another tenant’s room (NOT_FOUND)', async () => {
    const room = await createRoom(p, alice, 'mine');
    const anon = await fetch(`${p.gatewayUrl}/graphql/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: STREAM, variables: { room } }),
    });
    expect(anon.status).toBe(401);
    expect(((await anon.json()) as any).errors[0].extensions.code).toBe('UNAUTHENTICATED');

    const mallory = await p.tokenFor({ tenant: 'streams-other' });
    const s = subscribe<Event>(`${p.gatewayUrl}/graphql/stream`, mallory.token, STREAM, { room });
    const refused = await s.next();
    expect(refused.errors?.[0]?.extensions?.['code']).toBe('NOT_FOUND');
    await s.ended;
  });
});

describe('graceful shutdown', () => {
  it('completes an open stream (the client sees `complete`, not a dropped connection) and stops', async () => {
    const own = await startTestPlatform();
    try {
      const user = await own.tokenFor({ tenant: 'shutdown' });
      const room = await createRoom(own, user, 'closing');
      await post(own, user, room, 'before');
      const s = subscribe<Event>(`${own.gatewayUrl}/graphql/stream`, user.token, STREAM, { room, after: 0 });
      expect((await s.next()).data?.roomMessages.body).toBe('before');
      const closing = own.close();
      await s.ended; // resolves on `complete`; a dropped stream would reject
      await closing;
      expect(own.platform.gateway.openStreams).toBe(0);
      await expect(fetch(`${own.gatewayUrl}/healthz`)).rejects.toThrow();
    } finally {
      await own.close();
    }
  });
});
