/** Bad input through the gateway: each answered with a coded 4xx while the server keeps serving. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type GraphQLResult, type TestPlatform, type TestUser } from '../src/platform.js';

let p: TestPlatform;
let user: TestUser;
let roomA: string;
let roomB: string;

beforeAll(async () => {
  p = await startTestPlatform();
  user = await p.tokenFor({ tenant: 'bad-input' });
  const mk = async (name: string) => {
    const r = await p.gql(
      'mutation R($n: String!, $k: ID!) { createRoom(input: { name: $n }, idempotencyKey: $k) { room { id } } }',
      { n: name, k: randomUUID() },
      user.token,
    );
    return r.data.createRoom.room.id as string;
  };
  roomA = await mk('a');
  roomB = await mk('b');
  for (let i = 0; i < 3; i++) {
    await p.gql(
      'mutation P($r: ID!, $k: ID!) { postMessage(roomId: $r, input: { body: "m" }, idempotencyKey: $k) { message { seq } } }',
      { r: roomA, k: randomUUID() },
      user.token,
    );
    await p.gql(
      'mutation P($r: ID!, $k: ID!) { postMessage(roomId: $r, input: { body: "m" }, idempotencyKey: $k) { message { seq } } }',
      { r: roomB, k: randomUUID() },
      user.token,
    );
  }
});
afterAll(async () => {
  await p?.close();
});

function expectCoded(r: GraphQLResult, status: number, code: string): void {
  expect(r.status, JSON.stringify(r.errors ?? r.raw)).toBe(status);
  expect(r.errors?.[0]?.extensions?.code).toBe(code);
  expect(r.headers.get('content-type')).toContain('application/graphql-response+json');
}

async function stillServes(): Promise<void> {
  const r = await p.gql(
    '{ rooms(first: 5) { edges { node { name createdBy { displayName } } } } }',
    undefined,
    user.token,
  );
  expect(r.status).toBe(200);
  expect(r.errors).toBeUndefined();
  expect(r.data.rooms.edges).toHaveLength(2);
}

const MESSAGES =
  'query M($id: ID!, $first: Int, $after: String) { room(id: $id) { messages(first: $first, after: $after) { edges { cursor node { seq } } pageInfo { endCursor } } } }';

describe(`bad input through the gateway`, () => {
  it('malformed JSON → 400 GRAPHQL_PARSE_FAILED', async () => {
    expectCoded(
      await p.post('{"query": "{ rooms { edges { node { id } } } }", ', {
        authorization: `Bearer ${user.token}`,
      }),
      400,
      'GRAPHQL_PARSE_FAILED',
    );
    await stillServes();
  });

  it('a body over the limit → 413 PAYLOAD_TOO_LARGE', async () => {
    const max = p.platform.config.limits.maxBodyBytes;
    const body = JSON.stringify({
      query: '{ rooms { edges { node { id } } } }',
      variables: { pad: 'x'.repeat(max) },
    });
    expectCoded(await p.post(body, { authorization: `Bearer ${user.token}` }), 413, 'PAYLOAD_TOO_LARGE');
    await stillServes();
  });

  it('a depth bomb → 400 QUERY_TOO_COMPLEX', async () => {
    let q = '{ seq }';
    for (let i = 0; i < 10; i++) q = `{ edges { node { room { messages(first: 1) ${q} } } } }`;
    expectCoded(
      await p.gql(
        `query Deep($id: ID!) { room(id: $id) { messages(first: 1) ${q} } }`,
        { id: roomA },
        user.token,
      ),
      400,
      'QUERY_TOO_COMPLEX',
    );
    await stillServes();
  });

  it('an alias bomb → 400 QUERY_TOO_COMPLEX', async () => {
    const aliases = Array.from({ length: 500 }, (_, i) => `a${i}: capabilities { schemaVersion }`).join('\n');
    expectCoded(await p.gql(`{ ${aliases} }`), 400, 'QUERY_TOO_COMPLEX');
    await stillServes();
  });

  it('wrong variable types → 400 BAD_USER_INPUT', async () => {
    expectCoded(await p.gql(MESSAGES, { id: roomA, first: 'ten' }, user.token), 400, 'BAD_USER_INPUT');
    expectCoded(await p.gql(MESSAGES, { id: { not: 'an id' } }, user.token), 400, 'BAD_USER_INPUT');
    expectCoded(await p.gql(MESSAGES, { first: 1 }, user.token), 400, 'BAD_USER_INPUT'); // $id missing
    await stillServes();
  });

  it('first: 100000 → 400 BAD_USER_INPUT (literal or variable)', async () => {
    expectCoded(
      await p.gql('{ rooms(first: 100000) { edges { node { id } } } }', undefined, user.token),
      400,
      'BAD_USER_INPUT',
    );
    expectCoded(await p.gql(MESSAGES, { id: roomA, first: 100000 }, user.token), 400, 'BAD_USER_INPUT');
    expectCoded(await p.gql(MESSAGES, { id: roomA, first: -1 }, user.token), 400, 'BAD_USER_INPUT');
    await stillServes();
  });

  it('a forged cursor → coded BAD_USER_INPUT (400 when nothing else could be answered)', async () => {
    const page = await p.gql(MESSAGES, { id: roomA, first: 1 }, user.token);
    const cursor: string = page.data.room.messages.pageInfo.endCursor;
    const flipped = cursor.slice(0, -2) + (cursor.at(-2) === 'A' ? 'B' : 'A') + cursor.at(-1);
    for (const bad of ['garbage', flipped, `${cursor}x`]) {
      const r = await p.gql(MESSAGES, { id: roomA, first: 1, after: bad }, user.token);
      expect(r.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(r.data?.room ?? null).toBeNull();
    }
    const root = await p.gql(
      'query R($after: String) { rooms(first: 1, after: $after) { edges { node { id } } } }',
      { after: 'forged' },
      user.token,
    );
    expectCoded(root, 400, 'BAD_USER_INPUT');
    await stillServes();
  });

  it('a cursor from another list (room B’s messages, or the rooms list) → BAD_USER_INPUT', async () => {
    const b = await p.gql(MESSAGES, { id: roomB, first: 1 }, user.token);
    const foreign: string = b.data.room.messages.pageInfo.endCursor;
    const r = await p.gql(MESSAGES, { id: roomA, first: 1, after: foreign }, user.token);
    expect(r.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const rooms = await p.gql('{ rooms(first: 1) { pageInfo { endCursor } } }', undefined, user.token);
    const roomsCursor: string = rooms.data.rooms.pageInfo.endCursor;
    const r2 = await p.gql(MESSAGES, { id: roomA, first: 1, after: roomsCursor }, user.token);
    expect(r2.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    // And a messages cursor on the rooms list, at the root: 400.
    const r3 = await p.gql(
      'query R($after: String) { rooms(first: 1, after: $after) { edges { node { id } } } }',
      { after: foreign },
      user.token,
    );
    expectCoded(r3, 400, 'BAD_USER_INPUT');
    await stillServes();
  });

  it('a cursor from another tenant → BAD_USER_INPUT', async () => {
    const other = await p.tokenFor({ tenant: 'bad-input-other' });
    const theirs = await p.gql('{ rooms(first: 1) { pageInfo { endCursor } } }', undefined, other.token);
    const mine = await p.gql('{ rooms(first: 1) { pageInfo { endCursor } } }', undefined, user.token);
    const r = await p.gql(
      'query R($after: String) { rooms(first: 1, after: $after) { edges { node { id } } } }',
      { after: mine.data.rooms.pageInfo.endCursor },
      other.token,
    );
    expectCoded(r, 400, 'BAD_USER_INPUT');
    expect(theirs.status).toBe(200);
    await stillServes();
  });

  it('an unknown field → 400 GRAPHQL_VALIDATION_FAILED; a query that does not parse → 400 GRAPHQL_PARSE_FAILED', async () => {
    expectCoded(
      await p.gql('{ rooms { edges { node { password } } } }', undefined, user.token),
      400,
      'GRAPHQL_VALIDATION_FAILED',
    );
    expectCoded(await p.gql('{ rooms { edges ', undefined, user.token), 400, 'GRAPHQL_PARSE_FAILED');
    await stillServes();
  });

  describe('text the database cannot store (U+0000, an unpaired surrogate) → 400 BAD_USER_INPUT naming the field', () => {
    const WORKSPACE =
      'mutation W($input: CreateWorkspaceInput!, $k: ID!) { createWorkspace(input: $input, idempotencyKey: $k) { workspace { id } } }';
    const MEMORY =
      'mutation M($id: ID!, $input: PutMemoryInput!, $k: ID!) { putMemory(id: $id, input: $input, idempotencyKey: $k) { record { id } } }';
    const PLUGIN =
      'mutation P($input: CreatePluginInput!, $k: ID!) { createPlugin(input: $input, idempotencyKey: $k) { plugin { id } } }';
    const PROFILE =
      'mutation U($input: UpdateProfileInput!, $k: ID!) { updateProfile(input: $input, idempotencyKey: $k) { user { id } } }';
    /** GraphQL string literal text for `value` (\u escapes, so the document itself stays printable). */
    const literal = (value: string) =>
      `"${[...value].map((c) => (c.charCodeAt(0) < 0x20 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c)).join('')}"`;
    let workspaceId: string;

    beforeAll(async () => {
      const r = await p.gql(WORKSPACE, { input: { name: 'notes' }, k: randomUUID() }, user.token);
      workspaceId = r.data.createWorkspace.workspace.id;
    });

    /** What the tenant holds: nothing may change through any of the refused requests. */
    async function holdings(memoryId: string) {
      const r = await p.gql(
        `query H($m: ID!) {
           workspaces(first: 50) { edges { node { id } } }
           plugins(first: 50) { edges { node { id } } }
           memoryRecord(id: $m) { id }
           viewer { user { displayName } }
         }`,
        { m: memoryId },
        user.token,
      );
      expect(r.errors).toBeUndefined();
      return r.data;
    }

    function expectRefused(r: GraphQLResult, field: string, secret: string): void {
      expectCoded(r, 400, 'BAD_USER_INPUT');
      expect(r.errors?.[0]?.extensions?.['field']).toBe(field);
      expect(r.errors?.[0]?.message).toContain(field);
      // The value is never echoed.
      expect(JSON.stringify(r)).not.toContain(secret);
    }

    it.each([
      ['a NUL', (s: string) => `${s}\u0000tail`],
      ['an unpaired surrogate', (s: string) => `${s}\ud800tail`],
    ])('%s, sent in variables, in each of the four fields', async (_what, bad) => {
      const memoryId = randomUUID();
      const before = await holdings(memoryId);
      const cases: Array<[string, Record<string, unknown>, string]> = [
        [WORKSPACE, { input: { name: bad('ws-secret') } }, 'input.name'],
        [
          MEMORY,
          { id: memoryId, input: { workspaceId, kind: 'note', content: bad('memory-secret') } },
          'input.content',
        ],
        [PLUGIN, { input: { name: 'nul-plugin', displayName: bad('plugin-secret') } }, 'input.displayName'],
        [PROFILE, { input: { displayName: bad('profile-secret') } }, 'input.displayName'],
      ];
      for (const [query, variables, field] of cases) {
        const r = await p.gql(query, { ...variables, k: randomUUID() }, user.token);
        expectRefused(r, field, 'secret');
      }
      expect(await holdings(memoryId)).toEqual(before);
      await stillServes();
    });

    it('a NUL written inline in the document, in each of the four fields', async () => {
      const memoryId = randomUUID();
      const before = await holdings(memoryId);
      const bad = (s: string) => literal(`${s}\u0000tail`);
      const key = () => JSON.stringify(randomUUID());
      const cases: Array<[string, string]> = [
        [
          `mutation { createWorkspace(input: { name: ${bad('ws-secret')} }, idempotencyKey: ${key()}) { workspace { id } } }`,
          'input.name',
        ],
        [
          `mutation { putMemory(id: ${JSON.stringify(memoryId)}, input: { workspaceId: ${JSON.stringify(workspaceId)}, kind: "note", content: ${bad('memory-secret')} }, idempotencyKey: ${key()}) { record { id } } }`,
          'input.content',
        ],
        [
          `mutation { createPlugin(input: { name: "nul-plugin", displayName: ${bad('plugin-secret')} }, idempotencyKey: ${key()}) { plugin { id } } }`,
          'input.displayName',
        ],
        [
          `mutation { updateProfile(input: { displayName: ${bad('profile-secret')} }, idempotencyKey: ${key()}) { user { id } } }`,
          'input.displayName',
        ],
      ];
      for (const [query, field] of cases)
        expectRefused(await p.gql(query, undefined, user.token), field, 'secret');
      expect(await holdings(memoryId)).toEqual(before);
      // The same request with good text goes through: the refusals were about the text alone.
      const ok = await p.gql(
        `mutation { createWorkspace(input: { name: ${literal('Notizen 😀')} }, idempotencyKey: ${key()}) { workspace { id } } }`,
        undefined,
        user.token,
      );
      expect(ok.errors).toBeUndefined();
      await stillServes();
    });
  });

  it('none of it was an internal error (nothing logged at error level)', () => {
    expect(p.errorLogs).toEqual([]);
  });
});
