/** Through the gateway over real HTTP: queries spanning subgraphs, tenant isolation, health. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../src/platform.js';

let p: TestPlatform;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  p = await startTestPlatform();
  alice = await p.tokenFor({ tenant: 'acme', displayName: 'Alice Acme' });
  bob = await p.tokenFor({ tenant: 'globex', displayName: 'Bob Globex' });
});
afterAll(async () => {
  await p?.close();
});

const CREATE_ROOM =
  'mutation R($name: String!, $k: ID!) { createRoom(input: { name: $name }, idempotencyKey: $k) { room { id name } } }';
const POST =
  'mutation P($room: ID!, $body: String!, $k: ID!) { postMessage(roomId: $room, input: { body: $body }, idempotencyKey: $k) { message { id seq } } }';

async function createRoom(user: TestUser, name: string): Promise<string> {
  const r = await p.gql(CREATE_ROOM, { name, k: randomUUID() }, user.token);
  expect(r.errors).toBeUndefined();
  return r.data.createRoom.room.id as string;
}

describe(`federation through the gateway`, () => {
  it('resolves rooms → messages → author { displayName email } from identity (entity resolution)', async () => {
    const room = await createRoom(alice, 'ops');
    for (const body of ['first', 'second']) {
      const r = await p.gql(POST, { room, body, k: randomUUID() }, alice.token);
      expect(r.errors).toBeUndefined();
    }
    const r = await p.gql(
      `query Span($id: ID!) {
        room(id: $id) {
          name
          createdBy { displayName email }
          messages(first: 10) { edges { node { seq body author { id displayName email } } } }
        }
      }`,
      { id: room },
      alice.token,
    );
    expect(r.status).toBe(200);
    expect(r.errors).toBeUndefined();
    expect(r.data.room.name).toBe('ops');
    expect(r.data.room.createdBy).toEqual({ displayName: 'Alice Acme', email: alice.email });
    expect(r.data.room.messages.edges.map((e: any) => e.node)).toEqual([
      { seq: 1, body: 'first', author: { id: alice.userId, displayName: 'Alice Acme', email: alice.email } },
      { seq: 2, body: 'second', author: { id: alice.userId, displayName: 'Alice Acme', email: alice.email } },
    ]);
  });

  it('resolves memoryRecord.author and workspace across memory and identity', async () => {
    const ws = await p.gql(
      'mutation W($k: ID!) { createWorkspace(input: { name: "notes" }, idempotencyKey: $k) { workspace { id } } }',
      { k: randomUUID() },
      alice.token,
    );
    expect(ws.errors).toBeUndefined();
    const workspaceId = ws.data.createWorkspace.workspace.id;
    const id = randomUUID();
    const put = await p.gql(
      `mutation M($id: ID!, $ws: ID!, $k: ID!) {
        putMemory(id: $id, input: { workspaceId: $ws, kind: "note", content: "remember the milk", tags: ["home"] }, idempotencyKey: $k) {
          created record { id version }
        }
      }`,
      { id, ws: workspaceId, k: randomUUID() },
      alice.token,
    );
    expect(put.errors).toBeUndefined();
    expect(put.data.putMemory).toEqual({ created: true, record: { id, version: 1 } });
    const r = await p.gql(
      'query R($id: ID!) { memoryRecord(id: $id) { content tags workspace { name createdBy { email } } author { displayName email } } }',
      { id },
      alice.token,
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.memoryRecord).toEqual({
      content: 'remember the milk',
      tags: ['home'],
      workspace: { name: 'notes', createdBy: { email: alice.email } },
      author: { displayName: 'Alice Acme', email: alice.email },
    });
  });

  it('answers the public capabilities query without a token', async () => {
    const r = await p.gql(
      '{ capabilities { schemaVersion limits { maxPageSize maxPayloadBytes } client { retryMaxAttempts } } }',
    );
    expect(r.status).toBe(200);
    expect(r.data.capabilities.limits).toEqual({ maxPageSize: 100, maxPayloadBytes: 5 * 1024 * 1024 });
  });

  it('keeps tenants apart: B cannot read, list, post to or subscribe to A’s room', async () => {
    const room = await createRoom(alice, 'private');
    const read = await p.gql('query Q($id: ID!) { room(id: $id) { id name } }', { id: room }, bob.token);
    expect(read.data?.room ?? null).toBeNull();
    if (read.errors) expect(read.errors[0]!.extensions?.code).toBe('NOT_FOUND');
    const list = await p.gql('{ rooms(first: 100) { edges { node { id } } } }', undefined, bob.token);
    expect(list.data.rooms.edges.map((e: any) => e.node.id)).not.toContain(room);
    const post = await p.gql(POST, { room, body: 'intrusion', k: randomUUID() }, bob.token);
    expect(post.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    // A's own view is untouched.
    const mine = await p.gql(
      'query Q($id: ID!) { room(id: $id) { messages(first: 5) { edges { node { body } } } } }',
      { id: room },
      alice.token,
    );
    expect(mine.data.room.messages.edges).toEqual([]);
  });

  it('rejects a forged token with 401 UNAUTHENTICATED and no token where one is needed', async () => {
    const [h, , s] = alice.token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ sub: bob.userId, tid: alice.tenantId, role: 'OWNER' })).toString('base64url')}.${s}`;
    const r = await p.gql('{ rooms { edges { node { id } } } }', undefined, forged);
    expect(r.status).toBe(401);
    expect(r.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const anon = await p.gql('{ rooms { edges { node { id } } } }');
    expect(anon.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('echoes the correlation id', async () => {
    const r = await p.gql('{ capabilities { schemaVersion } }', undefined, null, {
      'x-correlation-id': 'e2e-corr-1',
    });
    expect(r.headers.get('x-correlation-id')).toBe('e2e-corr-1');
  });
});

describe('health', () => {
  it('/healthz is live and /readyz is ready when every subgraph is', async () => {
    const live = await fetch(`${p.gatewayUrl}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${p.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });
});
