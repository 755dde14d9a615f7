/**
 * The memory subgraph over real HTTP on a real database: PUT-style writes with versions, optimistic concurrency
 * under concurrent requests, idempotent replay, keyset paging, cursor scoping, limits, roles and tenant isolation.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { memorySubgraph } from '../src/index.js';
import {
  codeOf,
  dataOf,
  newPrincipal,
  startSubgraph,
  type Harness,
  type Principal,
} from '../../../test/src/subgraph-harness.js';

const MAX_PAYLOAD = 4096;

let h: Harness;
beforeAll(async () => {
  h = await startSubgraph(memorySubgraph, { MAX_PAYLOAD_BYTES: String(MAX_PAYLOAD) });
});
afterAll(async () => {
  await h?.close();
});

const RECORD_FIELDS = `id version kind content tags createdAt updatedAt author { id } workspace { id name }`;

const CREATE_WORKSPACE = `mutation ($name: String!, $key: ID!) {
  createWorkspace(input: { name: $name }, idempotencyKey: $key) { workspace { id name createdAt createdBy { id } } }
}`;

const PUT = `mutation ($id: ID!, $input: PutMemoryInput!, $expectedVersion: Int, $key: ID!) {
  putMemory(id: $id, input: $input, expectedVersion: $expectedVersion, idempotencyKey: $key) {
    created record { ${RECORD_FIELDS} }
  }
}`;

const RECORDS = `query ($ws: ID!, $first: Int, $after: String) {
  workspace(id: $ws) { records(first: $first, after: $after) {
    edges { cursor node { id version updatedAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  } }
}`;

const WORKSPACES = `query ($first: Int, $after: String) {
  workspaces(first: $first, after: $after) {
    edges { cursor node { id name } }
    pageInfo { hasNextPage endCursor }
  }
}`;

async function createWorkspace(p: Principal, name = 'notes'): Promise<string> {
  const r = await h.gql(p, CREATE_WORKSPACE, { name, key: randomUUID() });
  return dataOf(r).createWorkspace.workspace.id as string;
}

interface PutOptions {
  id?: string;
  kind?: string;
  content?: string;
  tags?: string[] | null;
  expectedVersion?: number | null;
  key?: string;
}

function put(p: Principal, workspaceId: string, o: PutOptions = {}) {
  return h.gql(p, PUT, {
    id: o.id ?? randomUUID(),
    input: {
      workspaceId,
      kind: o.kind ?? 'note',
      content: o.content ?? 'hello',
      tags: 'tags' in o ? o.tags : ['a'],
    },
    expectedVersion: o.expectedVersion ?? null,
    key: o.key ?? randomUUID(),
  });
}

async function putOk(p: Principal, workspaceId: string, o: PutOptions = {}) {
  return dataOf(await put(p, workspaceId, o)).putMemory as {
    created: boolean;
    record: {
      id: string;
      version: number;
      content: string;
      createdAt: string;
      updatedAt: string;
      tags: string[];
    };
  };
}

async function readVersion(p: Principal, id: string): Promise<number | null> {
  const r = dataOf(await h.gql(p, `query ($id: ID!) { memoryRecord(id: $id) { version } }`, { id }));
  return (r.memoryRecord?.version as number | undefined) ?? null;
}

describe('workspaces', () => {
  it('creates a workspace owned by the caller and reads it back', async () => {
    const owner = newPrincipal();
    const r = dataOf(await h.gql(owner, CREATE_WORKSPACE, { name: '  Research  ', key: randomUUID() }));
    const ws = r.createWorkspace.workspace;
    expect(ws.name).toBe('Research');
    expect(ws.createdBy).toEqual({ id: owner.userId });
    expect(new Date(ws.createdAt).toISOString()).toBe(ws.createdAt);
    const read = dataOf(
      await h.gql(owner, `query ($id: ID!) { workspace(id: $id) { id name } }`, { id: ws.id }),
    );
    expect(read.workspace).toEqual({ id: ws.id, name: 'Research' });
  });

  it('rejects an empty name without echoing it', async () => {
    const r = await h.gql(newPrincipal(), CREATE_WORKSPACE, { name: '   ', key: randomUUID() });
    expect(codeOf(r)).toBe('BAD_USER_INPUT');
    expect(r.body.errors?.[0]?.extensions?.['field']).toBe('input.name');
  });

  it('pages newest first with no duplicates or gaps while workspaces are added between pages', async () => {
    const p = newPrincipal();
    const original: string[] = [];
    for (let i = 0; i < 7; i++) original.push(await createWorkspace(p, `ws-${i}`));
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const conn: any = dataOf(await h.gql(p, WORKSPACES, { first: 3, after })).workspaces;
      seen.push(...conn.edges.map((e: any) => e.node.id));
      await createWorkspace(p, `added-${page}`); // newer than every cursor handed out: lands on page one
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    expect(seen).toEqual([...original].reverse());
  });
});

describe('putMemory', () => {
  it('creates at version 1, then replaces and increments the version on each write', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();
    const first = await putOk(p, ws, { id, content: 'one', tags: ['x', 'y'] });
    expect(first.created).toBe(true);
    expect(first.record).toMatchObject({ id, version: 1, content: 'one', tags: ['x', 'y'] });
    const second = await putOk(p, ws, { id, content: 'two', tags: null, kind: 'fact.v2' });
    expect(second.created).toBe(false);
    expect(second.record).toMatchObject({ id, version: 2, content: 'two', tags: [], kind: 'fact.v2' });
    expect(second.record.createdAt).toBe(first.record.createdAt);
    expect(new Date(second.record.updatedAt).getTime()).toBeGreaterThanOrEqual(
      new Date(first.record.updatedAt).getTime(),
    );
    const third = await putOk(p, ws, { id, content: 'three' });
    expect(third.record.version).toBe(3);
    const read = dataOf(
      await h.gql(p, `query ($id: ID!) { memoryRecord(id: $id) { ${RECORD_FIELDS} } }`, { id }),
    ).memoryRecord;
    expect(read).toMatchObject({
      id,
      version: 3,
      content: 'three',
      author: { id: p.userId },
      workspace: { id: ws },
    });
  });

  it('records the writer of the current version as author', async () => {
    const tenant = randomUUID();
    const alice = newPrincipal('OWNER', tenant);
    const bob = newPrincipal('OPERATOR', tenant);
    const ws = await createWorkspace(alice);
    const id = randomUUID();
    await putOk(alice, ws, { id });
    const r = dataOf(
      await h.gql(bob, PUT, {
        id,
        input: { workspaceId: ws, kind: 'note', content: 'by bob' },
        key: randomUUID(),
      }),
    );
    expect(r.putMemory.record.author).toEqual({ id: bob.userId });
  });

  it('honours expectedVersion: 0 must not exist, n must match, else VERSION_CONFLICT with currentVersion', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();

    const missing = await put(p, ws, { id, expectedVersion: 3 });
    expect(codeOf(missing)).toBe('VERSION_CONFLICT');
    expect(missing.body.errors?.[0]?.extensions?.['currentVersion']).toBe(0);

    expect((await putOk(p, ws, { id, expectedVersion: 0 })).created).toBe(true);

    const again = await put(p, ws, { id, expectedVersion: 0 });
    expect(codeOf(again)).toBe('VERSION_CONFLICT');
    expect(again.body.errors?.[0]?.extensions?.['currentVersion']).toBe(1);
    expect(again.status).toBe(200); // a field error, inside a 200 (GraphQL over HTTP)
    expect(again.body.data).toBeNull();

    const stale = await put(p, ws, { id, expectedVersion: 2, content: 'lost?' });
    expect(codeOf(stale)).toBe('VERSION_CONFLICT');
    expect(stale.body.errors?.[0]?.extensions?.['currentVersion']).toBe(1);

    const ok = await putOk(p, ws, { id, expectedVersion: 1, content: 'v2' });
    expect(ok.record).toMatchObject({ version: 2, content: 'v2' });
    expect(await readVersion(p, id)).toBe(2);

    const negative = await put(p, ws, { id, expectedVersion: -1 });
    expect(codeOf(negative)).toBe('BAD_USER_INPUT');
  });

  it('lets exactly one of two concurrent writes with the same expectedVersion succeed', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    for (let round = 0; round < 5; round++) {
      const id = randomUUID();
      await putOk(p, ws, { id, content: 'base' });
      const results = await Promise.all([
        put(p, ws, { id, expectedVersion: 1, content: 'left' }),
        put(p, ws, { id, expectedVersion: 1, content: 'right' }),
      ]);
      expect(results.map((r) => String(codeOf(r) ?? 'ok')).sort()).toEqual(['VERSION_CONFLICT', 'ok']);
      const loser = results.find((r) => codeOf(r))!;
      expect(loser.body.errors?.[0]?.extensions?.['currentVersion']).toBe(2);
      const winner = results.find((r) => !codeOf(r))!;
      const read = dataOf(
        await h.gql(p, `query ($id: ID!) { memoryRecord(id: $id) { version content } }`, { id }),
      );
      expect(read.memoryRecord).toEqual({ version: 2, content: dataOf(winner).putMemory.record.content });
    }
  });

  it('lets exactly one of two concurrent creates with expectedVersion 0 succeed', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    for (let round = 0; round < 5; round++) {
      const id = randomUUID();
      const results = await Promise.all([
        put(p, ws, { id, expectedVersion: 0, content: 'left' }),
        put(p, ws, { id, expectedVersion: 0, content: 'right' }),
      ]);
      expect(results.map((r) => String(codeOf(r) ?? 'ok')).sort()).toEqual(['VERSION_CONFLICT', 'ok']);
      expect(await readVersion(p, id)).toBe(1);
    }
  });

  it('loses no update among concurrent unconditional writes: versions 1..n, each once', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();
    const n = 8;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => put(p, ws, { id, content: `writer ${i}` })),
    );
    const payloads = results.map((r) => dataOf(r).putMemory);
    expect(payloads.map((x) => x.record.version).sort((a, b) => a - b)).toEqual(
      Array.from({ length: n }, (_, i) => i + 1),
    );
    expect(payloads.filter((x) => x.created)).toHaveLength(1);
    expect(await readVersion(p, id)).toBe(n);
  });

  it('replays the same key and arguments without writing again', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();
    const key = randomUUID();
    const first = await put(p, ws, { id, key, content: 'once' });
    expect(first.body.extensions?.['idempotentReplay']).toBeUndefined();
    const replay = await put(p, ws, { id, key, content: 'once' });
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(replay.body.data).toEqual(first.body.data);
    expect(dataOf(replay).putMemory).toMatchObject({ created: true, record: { version: 1 } });
    expect(await readVersion(p, id)).toBe(1);

    const reused = await put(p, ws, { id, key, content: 'other arguments' });
    expect(codeOf(reused)).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await readVersion(p, id)).toBe(1);
  });

  it('applies one effect for two concurrent requests with one key', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();
    const key = randomUUID();
    const results = await Promise.all([put(p, ws, { id, key }), put(p, ws, { id, key })]);
    for (const r of results) expect([undefined, 'IDEMPOTENCY_KEY_IN_PROGRESS']).toContain(codeOf(r));
    expect(results.some((r) => !codeOf(r))).toBe(true);
    expect(await readVersion(p, id)).toBe(1);
  });

  it('refuses a record id that lives in another workspace of the tenant', async () => {
    const p = newPrincipal();
    const ws1 = await createWorkspace(p, 'one');
    const ws2 = await createWorkspace(p, 'two');
    const id = randomUUID();
    await putOk(p, ws1, { id });
    const r = await put(p, ws2, { id });
    expect(codeOf(r)).toBe('BAD_USER_INPUT');
    expect(r.body.errors?.[0]?.message).not.toContain(id);
    expect(await readVersion(p, id)).toBe(1);
  });

  it('answers NOT_FOUND for a workspace that does not exist in the caller tenant', async () => {
    const p = newPrincipal();
    const r = await put(p, randomUUID());
    expect(codeOf(r)).toBe('NOT_FOUND');
  });

  it('validates id, kind, tags and content size, naming the field but never the value', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const cases: [PutOptions, string, string][] = [
      [{ id: 'not-a-uuid-value' }, 'BAD_USER_INPUT', 'id'],
      [{ kind: 'Has Spaces!' }, 'BAD_USER_INPUT', 'input.kind'],
      [{ kind: '' }, 'BAD_USER_INPUT', 'input.kind'],
      [{ kind: 'k'.repeat(65) }, 'BAD_USER_INPUT', 'input.kind'],
      [{ tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, 'BAD_USER_INPUT', 'input.tags'],
      [{ tags: ['ok', ''] }, 'BAD_USER_INPUT', 'input.tags.1'],
      [{ tags: ['secret-tag-'.repeat(7)] }, 'BAD_USER_INPUT', 'input.tags.0'],
      // 2-byte characters: under the limit in characters, over it in bytes
      [{ content: 'é'.repeat(MAX_PAYLOAD / 2 + 1) }, 'PAYLOAD_TOO_LARGE', 'input.content'],
    ];
    for (const [options, code, field] of cases) {
      const r = await put(p, ws, options);
      expect(codeOf(r), JSON.stringify(field)).toBe(code);
      expect(r.body.errors?.[0]?.extensions?.['field']).toBe(field);
      const message = r.body.errors?.[0]?.message ?? '';
      for (const value of [options.id, options.kind, ...(options.tags ?? [])]) {
        if (value && value.length > 2) expect(message).not.toContain(value);
      }
    }
    const atLimit = await putOk(p, ws, { content: 'é'.repeat(MAX_PAYLOAD / 2), tags: Array(32).fill('t') });
    expect(atLimit.record.version).toBe(1);
  });

  it('lets a VIEWER read but not write, and asks for a token when there is none', async () => {
    const tenant = randomUUID();
    const owner = newPrincipal('OWNER', tenant);
    const viewer = newPrincipal('VIEWER', tenant);
    const ws = await createWorkspace(owner);
    const id = randomUUID();
    await putOk(owner, ws, { id });
    expect(codeOf(await put(viewer, ws, { id }))).toBe('FORBIDDEN');
    expect(codeOf(await h.gql(viewer, CREATE_WORKSPACE, { name: 'x', key: randomUUID() }))).toBe('FORBIDDEN');
    expect(await readVersion(viewer, id)).toBe(1);
    expect(codeOf(await put(null as unknown as Principal, ws, { id }))).toBe('UNAUTHENTICATED');
    expect(codeOf(await h.gql(null, `{ workspaces { edges { cursor } } }`))).toBe('UNAUTHENTICATED');
  });
});

describe('Workspace.records connection', () => {
  it('pages most recently updated first, without duplicates or gaps, while records are written between pages', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const original: string[] = [];
    for (let i = 0; i < 23; i++) original.push((await putOk(p, ws, { content: `r${i}` })).record.id);
    const seen: { id: string; updatedAt: string }[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const conn: any = dataOf(await h.gql(p, RECORDS, { ws, first: 5, after })).workspace.records;
      pages++;
      expect(conn.pageInfo.hasPreviousPage).toBe(after !== null);
      seen.push(...conn.edges.map((e: any) => e.node));
      await putOk(p, ws, { content: `inserted after page ${pages}` });
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    expect(pages).toBe(5);
    expect(seen.map((r) => r.id)).toEqual([...original].reverse());
    const times = seen.map((r) => new Date(r.updatedAt).getTime());
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('moves a replaced record to the front', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const a = (await putOk(p, ws)).record.id;
    const b = (await putOk(p, ws)).record.id;
    await putOk(p, ws, { id: a, content: 'edited' });
    const conn: any = dataOf(await h.gql(p, RECORDS, { ws, first: 10 })).workspace.records;
    expect(conn.edges.map((e: any) => e.node.id)).toEqual([a, b]);
  });

  it('rejects a cursor from another workspace, another tenant, or one that was altered', async () => {
    const tenant = randomUUID();
    const p = newPrincipal('OWNER', tenant);
    const ws1 = await createWorkspace(p, 'one');
    const ws2 = await createWorkspace(p, 'two');
    for (let i = 0; i < 3; i++) {
      await putOk(p, ws1);
      await putOk(p, ws2);
    }
    const page: any = dataOf(await h.gql(p, RECORDS, { ws: ws1, first: 1 })).workspace.records;
    const cursor = page.pageInfo.endCursor as string;

    const otherWorkspace = await h.gql(p, RECORDS, { ws: ws2, first: 1, after: cursor });
    expect(codeOf(otherWorkspace)).toBe('BAD_USER_INPUT');
    expect(otherWorkspace.body.errors?.[0]?.message).not.toContain(cursor);

    const altered = cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'BB' : 'AA');
    expect(codeOf(await h.gql(p, RECORDS, { ws: ws1, first: 1, after: altered }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await h.gql(p, RECORDS, { ws: ws1, first: 1, after: 'garbage' }))).toBe('BAD_USER_INPUT');

    // Another tenant: the same list name, its own tenant in the scope.
    const list: any = dataOf(await h.gql(p, WORKSPACES, { first: 1 })).workspaces;
    const foreign = await h.gql(newPrincipal(), WORKSPACES, { first: 1, after: list.pageInfo.endCursor });
    expect(codeOf(foreign)).toBe('BAD_USER_INPUT');
    // ...and another user of the same tenant may use it.
    expect(
      codeOf(
        await h.gql(newPrincipal('VIEWER', tenant), WORKSPACES, { first: 1, after: list.pageInfo.endCursor }),
      ),
    ).toBeUndefined();
  });

  it('caps the page size: first 101 is BAD_USER_INPUT, 100 is fine', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const viaVariable = await h.gql(p, RECORDS, { ws, first: 101 });
    expect(codeOf(viaVariable)).toBe('BAD_USER_INPUT');
    const literal = await h.gql(p, `{ workspaces(first: 101) { edges { cursor } } }`);
    expect(codeOf(literal)).toBe('BAD_USER_INPUT');
    expect(codeOf(await h.gql(p, RECORDS, { ws, first: 100 }))).toBeUndefined();
    expect(codeOf(await h.gql(p, WORKSPACES, { first: -1 }))).toBe('BAD_USER_INPUT');
  });
});

describe('tenant isolation', () => {
  const ENTITIES = `query ($reps: [_Any!]!) {
    _entities(representations: $reps) {
      ... on MemoryRecord { id version author { id } workspace { id } }
      ... on Workspace { id name createdBy { id } }
    }
  }`;

  it("keeps tenant A's workspaces and records out of tenant B's reads, lists and entity references", async () => {
    const a = newPrincipal();
    const b = newPrincipal();
    const ws = await createWorkspace(a, 'private');
    const id = randomUUID();
    await putOk(a, ws, { id, content: 'a-secret' });

    const ownEntities = dataOf(
      await h.gql(a, ENTITIES, {
        reps: [
          { __typename: 'MemoryRecord', id },
          { __typename: 'Workspace', id: ws },
        ],
      }),
    );
    expect(ownEntities._entities).toEqual([
      { id, version: 1, author: { id: a.userId }, workspace: { id: ws } },
      { id: ws, name: 'private', createdBy: { id: a.userId } },
    ]);

    expect(
      dataOf(await h.gql(b, `query ($id: ID!) { memoryRecord(id: $id) { id content } }`, { id }))
        .memoryRecord,
    ).toBeNull();
    expect(
      dataOf(await h.gql(b, `query ($id: ID!) { workspace(id: $id) { id } }`, { id: ws })).workspace,
    ).toBeNull();
    const foreign = dataOf(
      await h.gql(b, ENTITIES, {
        reps: [
          { __typename: 'MemoryRecord', id },
          { __typename: 'Workspace', id: ws },
          { __typename: 'MemoryRecord', id: 'not-a-uuid' },
        ],
      }),
    );
    expect(foreign._entities).toEqual([null, null, null]);
    expect(dataOf(await h.gql(b, WORKSPACES, { first: 100 })).workspaces.edges).toEqual([]);

    // B cannot write into A's workspace, and B's own record with the same id is a different record.
    expect(codeOf(await put(b, ws, { id }))).toBe('NOT_FOUND');
    const bws = await createWorkspace(b);
    const mine = await putOk(b, bws, { id, content: 'b-own', expectedVersion: 0 });
    expect(mine).toMatchObject({ created: true, record: { version: 1, content: 'b-own' } });
    const stillA = dataOf(
      await h.gql(a, `query ($id: ID!) { memoryRecord(id: $id) { version content } }`, { id }),
    );
    expect(stillA.memoryRecord).toEqual({ version: 1, content: 'a-secret' });
  });
});

describe('background indexing', () => {
  it('makes a write searchable by text without anyone running the worker by hand (NOTIFY wakes it)', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = (await putOk(p, ws, { content: 'the quick brown fox jumps' })).record.id;
    const SEARCH = `query ($ws: ID!, $q: MemorySearchInput!) {
      searchMemory(workspaceId: $ws, query: $q) { edges { score node { id } } }
    }`;
    // Condition polling, not a fixed sleep: done as soon as the job has run.
    await vi.waitFor(
      async () => {
        const edges = dataOf(await h.gql(p, SEARCH, { ws, q: { text: 'fox' } })).searchMemory.edges;
        expect(edges.map((e: any) => e.node.id)).toEqual([id]);
      },
      { timeout: 10_000, interval: 25 },
    );
  });
});
