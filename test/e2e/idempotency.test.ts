/** Idempotency keys through the gateway (docs/architecture.md#idempotency), on PGlite or on PostgreSQL when DATABASE_URL is set. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';

let p: TestPlatform;
beforeAll(async () => {
  p = await startTestPlatform();
});
afterAll(async () => {
  await p?.close();
});

const CREATE_ROOM =
  'mutation R($name: String!, $k: ID!) { createRoom(input: { name: $name }, idempotencyKey: $k) { room { id name createdAt } } }';
const POST =
  'mutation P($room: ID!, $body: String!, $k: ID!) { postMessage(roomId: $room, input: { body: $body }, idempotencyKey: $k) { message { id seq body } } }';

async function roomCount(user: TestUser): Promise<number> {
  const r = await p.gql('{ rooms(first: 100) { edges { node { id } } } }', undefined, user.token);
  expect(r.errors).toBeUndefined();
  return r.data.rooms.edges.length;
}

async function messageSeqs(user: TestUser, room: string): Promise<number[]> {
  const r = await p.gql(
    'query M($id: ID!) { room(id: $id) { messages(first: 100) { edges { node { seq } } } } }',
    { id: room },
    user.token,
  );
  return r.data.room.messages.edges.map((e: any) => e.node.seq as number);
}

describe(`idempotency through the gateway`, () => {
  it('same key and arguments twice: one effect, the same result marked as a replay', async () => {
    const user = await p.tokenFor({ tenant: 'replay' });
    const key = randomUUID();
    const first = await p.gql(CREATE_ROOM, { name: 'ops', k: key }, user.token);
    expect(first.status).toBe(200);
    expect(first.errors).toBeUndefined();
    expect(first.extensions?.['idempotentReplay']).toBeUndefined();
    const second = await p.gql(CREATE_ROOM, { name: 'ops', k: key }, user.token);
    expect(second.status).toBe(200);
    expect(second.extensions?.['idempotentReplay']).toBe(true);
    expect(second.data).toEqual(first.data);
    expect(await roomCount(user)).toBe(1);

    // Same for an append: the message is posted once and keeps its sequence number.
    const room = first.data.createRoom.room.id;
    const postKey = randomUUID();
    const a = await p.gql(POST, { room, body: 'hello', k: postKey }, user.token);
    const b = await p.gql(POST, { room, body: 'hello', k: postKey }, user.token);
    expect(b.extensions?.['idempotentReplay']).toBe(true);
    expect(b.data).toEqual(a.data);
    expect(await messageSeqs(user, room)).toEqual([1]);
  });

  it('same key, other arguments: IDEMPOTENCY_KEY_REUSED (422) and nothing written', async () => {
    const user = await p.tokenFor({ tenant: 'reuse' });
    const key = randomUUID();
    const first = await p.gql(CREATE_ROOM, { name: 'one', k: key }, user.token);
    expect(first.errors).toBeUndefined();
    const other = await p.gql(CREATE_ROOM, { name: 'two', k: key }, user.token);
    expect(other.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(other.status).toBe(422);
    expect(other.data ?? null).toBeNull();
    expect(await roomCount(user)).toBe(1);
  });

  it('keys are scoped per tenant: the same key in another tenant is a new request', async () => {
    const a = await p.tokenFor({ tenant: 'scope-a' });
    const b = await p.tokenFor({ tenant: 'scope-b' });
    const key = randomUUID();
    const ra = await p.gql(CREATE_ROOM, { name: 'x', k: key }, a.token);
    const rb = await p.gql(CREATE_ROOM, { name: 'x', k: key }, b.token);
    expect(rb.extensions?.['idempotentReplay']).toBeUndefined();
    expect(rb.data.createRoom.room.id).not.toBe(ra.data.createRoom.room.id);
  });

  it('concurrent requests with one key: exactly one effect; the others replay or are told it is in progress', async () => {
    const user = await p.tokenFor({ tenant: 'race' });
    for (let round = 0; round < 5; round++) {
      const key = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 4 }, () => p.gql(CREATE_ROOM, { name: `race-${round}`, k: key }, user.token)),
      );
      const winners = results.filter((r) => !r.errors && r.extensions?.['idempotentReplay'] === undefined);
      expect(winners).toHaveLength(1);
      for (const r of results) {
        if (r === winners[0]) continue;
        if (r.errors) {
          expect(r.errors[0]!.extensions?.code).toBe('IDEMPOTENCY_KEY_IN_PROGRESS');
          expect(r.status).toBe(409);
        } else {
          expect(r.extensions?.['idempotentReplay']).toBe(true);
          expect(r.data).toEqual(winners[0]!.data);
        }
      }
      expect(await roomCount(user)).toBe(round + 1);
    }
  });

  it('concurrent appends with one key: one message, no gap in the log', async () => {
    const user = await p.tokenFor({ tenant: 'race-post' });
    const created = await p.gql(CREATE_ROOM, { name: 'log', k: randomUUID() }, user.token);
    const room = created.data.createRoom.room.id;
    const key = randomUUID();
    await Promise.all(
      Array.from({ length: 4 }, () => p.gql(POST, { room, body: 'once', k: key }, user.token)),
    );
    await p.gql(POST, { room, body: 'next', k: randomUUID() }, user.token);
    expect(await messageSeqs(user, room)).toEqual([1, 2]);
  });
});
