/**
 * Rooms and the append-only message log over real HTTP: posting and listing, gap-free sequence numbers under
 * concurrency, keyset paging both ways, idempotent replay, input and permission errors, tenant isolation, and
 * the database refusing to edit the log.
 */
import { randomUUID } from 'node:crypto';
import { withTenant } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CREATE_ROOM,
  POST_MESSAGE,
  createRoom,
  post,
  startHarness,
  type Caller,
  type GraphQLResponse,
  type Harness,
} from './harness.js';

let h: Harness;
let alice: Caller;

beforeAll(async () => {
  h = await startHarness();
  alice = await h.caller({ role: 'OPERATOR' });
});
afterAll(async () => {
  await h?.close();
});

const MESSAGES = /* GraphQL */ `
  query Messages($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    room(id: $id) {
      id
      messages(first: $first, after: $after, last: $last, before: $before) {
        edges {
          cursor
          node {
            seq
            body
          }
        }
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
      }
    }
  }
`;

interface RoomsPage {
  rooms: { edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}

interface Page {
  edges: { cursor: string; node: { seq: number; body: string } }[];
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
}

async function messagesPage(caller: Caller, id: string, args: Record<string, unknown>): Promise<Page> {
  const r = await h.gql<{ room: { messages: Page } }>(caller, MESSAGES, { id, ...args });
  if (!r.data?.room) throw new Error(`messages failed: ${JSON.stringify(r.errors)}`);
  return r.data.room.messages;
}

describe('rooms and messages', () => {
  it('creates a room, posts messages, and lists them oldest first', async () => {
    const created = await h.gql<{
      createRoom: { room: { id: string; name: string; createdBy: { id: string } } };
    }>(alice, CREATE_ROOM, { name: '  incident-42  ', key: randomUUID() });
    expect(created.errors).toBeUndefined();
    const room = created.data!.createRoom.room;
    expect(room.name).toBe('incident-42');
    expect(room.createdBy).toEqual({ id: alice.sub });

    const first = await post(h, alice, room.id, 'hello');
    const second = await post(h, alice, room.id, 'world');
    expect([first.seq, second.seq]).toEqual([1, 2]);
    expect(first.author).toEqual({ id: alice.sub });
    expect(first.room).toEqual({ id: room.id, name: 'incident-42' });
    expect(new Date(first.createdAt).toISOString()).toBe(first.createdAt);

    const page = await messagesPage(alice, room.id, {});
    expect(page.edges.map((e) => [e.node.seq, e.node.body])).toEqual([
      [1, 'hello'],
      [2, 'world'],
    ]);
    expect(page.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
  });

  it('lists rooms newest first and pages through them', async () => {
    const tenant = await h.caller();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await createRoom(h, tenant, `room-${i}`));
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const r: GraphQLResponse<RoomsPage> = await h.gql<RoomsPage>(
        tenant,
        'query($after: String) { rooms(first: 2, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }',
        { after },
      );
      expect(r.errors).toBeUndefined();
      seen.push(...r.data!.rooms.edges.map((e) => e.node.id));
      if (!r.data!.rooms.pageInfo.hasNextPage) break;
      after = r.data!.rooms.pageInfo.endCursor;
    }
    expect(seen).toEqual([...ids].reverse());
  });

  it('numbers 20 concurrent posts 1..20 without gaps or duplicates', async () => {
    const room = await createRoom(h, alice, 'busy');
    const posted = await Promise.all(Array.from({ length: 20 }, (_, i) => post(h, alice, room, `m${i}`)));
    expect(posted.map((m) => m.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    const page = await messagesPage(alice, room, { first: 100 });
    expect(page.edges.map((e) => e.node.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // Each seq holds the body that was posted with it.
    const bySeq = new Map(posted.map((m) => [m.seq, m.body]));
    for (const e of page.edges) expect(e.node.body).toBe(bySeq.get(e.node.seq));
  });

  it('pages forward and backward without gaps or duplicates', async () => {
    const room = await createRoom(h, alice, 'paging');
    for (let i = 1; i <= 23; i++) await post(h, alice, room, `b${i}`);
    const all = Array.from({ length: 23 }, (_, i) => i + 1);

    const forward: number[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const p = await messagesPage(alice, room, { first: 5, after });
      pages++;
      forward.push(...p.edges.map((e) => e.node.seq));
      expect(p.pageInfo.hasPreviousPage).toBe(after !== null);
      if (!p.pageInfo.hasNextPage) break;
      after = p.pageInfo.endCursor;
    }
    expect(forward).toEqual(all);
    expect(pages).toBe(5);

    // last/before reads the newest page first; each page is in list order (oldest first).
    const backward: number[][] = [];
    let before: string | null = null;
    for (;;) {
      const p = await messagesPage(alice, room, { last: 5, before });
      backward.push(p.edges.map((e) => e.node.seq));
      expect(p.pageInfo.hasNextPage).toBe(before !== null);
      if (!p.pageInfo.hasPreviousPage) break;
      before = p.pageInfo.startCursor;
    }
    expect(backward[0]).toEqual([19, 20, 21, 22, 23]);
    expect(backward.reverse().flat()).toEqual(all);

    // A cursor from the middle, used forward: continues right after it.
    const mid = await messagesPage(alice, room, { first: 10 });
    const next = await messagesPage(alice, room, { first: 3, after: mid.edges[6]!.cursor });
    expect(next.edges.map((e) => e.node.seq)).toEqual([8, 9, 10]);
  });

  it('rejects cursors from another room, another tenant, or altered ones', async () => {
    const roomA = await createRoom(h, alice, 'a');
    const roomB = await createRoom(h, alice, 'b');
    for (const r of [roomA, roomB]) {
      await post(h, alice, r, 'x');
      await post(h, alice, r, 'y');
    }
    const cursor = (await messagesPage(alice, roomA, { first: 1 })).pageInfo.endCursor!;
    const other = await h.gql(alice, MESSAGES, { id: roomB, first: 1, after: cursor });
    expect(other.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const altered = await h.gql(alice, MESSAGES, {
      id: roomA,
      first: 1,
      after: cursor.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')),
    });
    expect(altered.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const both = await h.gql(alice, MESSAGES, { id: roomA, first: 1, last: 1 });
    expect(both.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const huge = await h.gql(alice, MESSAGES, { id: roomA, first: 100_000 });
    expect(huge.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const roomsCursor = (
      await h.gql<{ rooms: { pageInfo: { endCursor: string } } }>(
        alice,
        '{ rooms(first: 1) { pageInfo { endCursor } } }',
      )
    ).data!.rooms.pageInfo.endCursor;
    const mallory = await h.caller();
    const foreign = await h.gql(
      mallory,
      'query($a: String) { rooms(first: 1, after: $a) { edges { cursor } } }',
      {
        a: roomsCursor,
      },
    );
    expect(foreign.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('replays a repeated postMessage: one message, same seq, marked as a replay; other arguments are REUSED', async () => {
    const room = await createRoom(h, alice, 'replay');
    const key = randomUUID();
    const vars = { roomId: room, body: 'once', key };
    const first = await h.gql<{ postMessage: { message: { id: string; seq: number } } }>(
      alice,
      POST_MESSAGE,
      vars,
    );
    const again = await h.gql<{ postMessage: { message: { id: string; seq: number } } }>(
      alice,
      POST_MESSAGE,
      vars,
    );
    expect(first.errors).toBeUndefined();
    expect(first.extensions?.['idempotentReplay']).toBeUndefined();
    expect(again.data).toEqual(first.data);
    expect(again.extensions?.['idempotentReplay']).toBe(true);
    expect(first.data!.postMessage.message.seq).toBe(1);

    const reused = await h.gql(alice, POST_MESSAGE, { ...vars, body: 'twice' });
    expect(reused.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');

    const next = await post(h, alice, room, 'after');
    expect(next.seq).toBe(2);
    const page = await messagesPage(alice, room, {});
    expect(page.edges.map((e) => e.node.body)).toEqual(['once', 'after']);
  });

  it('answers bad input, missing rooms and missing rights with coded errors, writing nothing', async () => {
    const room = await createRoom(h, alice, 'errors');
    const code = async (caller: Caller | null, query: string, vars: Record<string, unknown>) =>
      (await h.gql(caller, query, vars)).errors?.[0]?.extensions?.code;

    expect(await code(alice, POST_MESSAGE, { roomId: room, body: '', key: randomUUID() })).toBe(
      'BAD_USER_INPUT',
    );
    expect(
      await code(alice, POST_MESSAGE, { roomId: room, body: 'x'.repeat(16_385), key: randomUUID() }),
    ).toBe('BAD_USER_INPUT');
    expect(await code(alice, POST_MESSAGE, { roomId: room, body: 'a\u0000b', key: randomUUID() })).toBe(
      'BAD_USER_INPUT',
    );
    expect(await code(alice, POST_MESSAGE, { roomId: 'not-a-uuid', body: 'x', key: randomUUID() })).toBe(
      'BAD_USER_INPUT',
    );
    expect(await code(alice, POST_MESSAGE, { roomId: room, body: 'x', key: 'short' })).toBe('BAD_USER_INPUT');
    expect(await code(alice, POST_MESSAGE, { roomId: randomUUID(), body: 'x', key: randomUUID() })).toBe(
      'NOT_FOUND',
    );
    expect(await code(alice, CREATE_ROOM, { name: ' ', key: randomUUID() })).toBe('BAD_USER_INPUT');
    expect(await code(alice, CREATE_ROOM, { name: 'n'.repeat(101), key: randomUUID() })).toBe(
      'BAD_USER_INPUT',
    );

    const viewer = await h.caller({ tenantId: alice.tenantId, role: 'VIEWER' });
    expect(await code(viewer, POST_MESSAGE, { roomId: room, body: 'x', key: randomUUID() })).toBe(
      'FORBIDDEN',
    );
    expect(await code(viewer, CREATE_ROOM, { name: 'v', key: randomUUID() })).toBe('FORBIDDEN');
    expect(await code(null, POST_MESSAGE, { roomId: room, body: 'x', key: randomUUID() })).toBe(
      'UNAUTHENTICATED',
    );

    // The largest allowed body is accepted, and none of the refused posts took a sequence number.
    const big = await post(h, alice, room, 'y'.repeat(16_384));
    expect(big.seq).toBe(1);
    // Viewers can read.
    const read = await messagesPage(viewer, room, {});
    expect(read.edges.map((e) => e.node.seq)).toEqual([1]);
  });

  it('keeps tenants apart: queries, posts and entity references', async () => {
    const room = await createRoom(h, alice, 'private');
    const message = await post(h, alice, room, 'secret plan');
    const mallory = await h.caller({ role: 'OWNER' });

    const seen = await h.gql<{ room: unknown }>(mallory, 'query($id: ID!) { room(id: $id) { id } }', {
      id: room,
    });
    expect(seen.errors).toBeUndefined();
    expect(seen.data!.room).toBeNull();
    const listed = await h.gql<{ rooms: { edges: unknown[] } }>(
      mallory,
      '{ rooms { edges { node { id } } } }',
    );
    expect(listed.data!.rooms.edges).toEqual([]);
    const posted = await h.gql(mallory, POST_MESSAGE, { roomId: room, body: 'intrusion', key: randomUUID() });
    expect(posted.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const ENTITIES = /* GraphQL */ `
      query ($reps: [_Any!]!) {
        _entities(representations: $reps) {
          ... on Room {
            id
            name
          }
          ... on Message {
            id
            seq
            body
            room {
              id
            }
          }
        }
      }
    `;
    const reps = [
      { __typename: 'Room', id: room },
      { __typename: 'Message', id: message.id },
      { __typename: 'Room', id: 'not-a-uuid' },
    ];
    const own = await h.gql<{ _entities: unknown[] }>(alice, ENTITIES, { reps });
    expect(own.errors).toBeUndefined();
    expect(own.data!._entities).toEqual([
      { id: room, name: 'private' },
      { id: message.id, seq: 1, body: 'secret plan', room: { id: room } },
      null,
    ]);
    const foreign = await h.gql<{ _entities: unknown[] }>(mallory, ENTITIES, { reps });
    expect(foreign.data!._entities).toEqual([null, null, null]);

    const after = await messagesPage(alice, room, {});
    expect(after.edges.map((e) => e.node.body)).toEqual(['secret plan']);
  });

  it('refuses to update or delete messages at the database level (append-only for the app role)', async () => {
    const room = await createRoom(h, alice, 'ledger');
    await post(h, alice, room, 'original');
    const auth = { tenantId: alice.tenantId, principalId: alice.sub, role: 'OWNER' as const, scopes: [] };
    await expect(
      withTenant(h.db, auth, (tx) =>
        tx.query("UPDATE coordination.messages SET body = 'forged' WHERE room_id = $1", [room]),
      ),
    ).rejects.toThrow(/permission denied/i);
    await expect(
      withTenant(h.db, auth, (tx) =>
        tx.query('DELETE FROM coordination.messages WHERE room_id = $1', [room]),
      ),
    ).rejects.toThrow(/permission denied/i);
    await expect(
      withTenant(h.db, auth, (tx) =>
        tx.query("UPDATE coordination.rooms SET name = 'renamed' WHERE id = $1", [room]),
      ),
    ).rejects.toThrow(/permission denied/i);
    // Row-Level Security: outside a tenant transaction the app role sees no rows at all.
    const bare = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM coordination.messages');
    expect(bare.rows[0]!.n).toBe(0);
    const page = await messagesPage(alice, room, {});
    expect(page.edges.map((e) => e.node.body)).toEqual(['original']);
  });

  it('logged no unexpected server errors', () => {
    expect(h.errorLogs).toEqual([]);
  });
});
