/**
 * Memory's features over real HTTP on a real database (PGlite, or PostgreSQL with DATABASE_URL): the secret filter with the
 * stored rows checked, metadata bounds, embeddings, search (text, vector, both) with paging and filters, listing
 * filters, expiry under a fake clock and the sweeper, cascading deletes, tenant erasure with its audit record, the
 * indexing queue with a poison job, and tenant isolation on every id-taking field.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf, dataOf, newPrincipal, type Principal } from '../../../test/src/subgraph-harness.js';
import { runIndexingJobs, sweepExpiredMemory, type IndexingJob } from '../src/index.js';
import { createResolvers, TENANT_ERASE_OPERATIONS } from '../src/resolvers.js';
import { key, startMemoryHarness, type MemoryHarness } from './harness.js';

let h: MemoryHarness;
/** Records whose indexing fails on purpose (the poison job test). */
const poisoned = new Set<string>();
const beforeIndex = (job: IndexingJob) => {
  if (poisoned.has(job.recordId)) throw new Error('injected indexing failure');
};
const chunking = { size: 200, overlap: 20 };
const index = () => runIndexingJobs(h.db, { now: h.clock.now, beforeIndex, batch: 100, chunking });

beforeAll(async () => {
  h = await startMemoryHarness();
});
afterAll(async () => {
  await h?.close();
});

const RECORD = `id version kind content tags metadata embedding expiresAt author { id } workspace { id }`;
const CREATE_WORKSPACE = `mutation ($input: CreateWorkspaceInput!, $key: ID!) {
  createWorkspace(input: $input, idempotencyKey: $key) { workspace { id secretPolicy embeddingDimensions } }
}`;
const PUT = `mutation ($id: ID!, $input: PutMemoryInput!, $expectedVersion: Int, $key: ID!) {
  putMemory(id: $id, input: $input, expectedVersion: $expectedVersion, idempotencyKey: $key) {
    created record { ${RECORD} }
  }
}`;
const GET = `query ($id: ID!) { memoryRecord(id: $id) { ${RECORD} } }`;
const SEARCH = `query ($ws: ID!, $q: MemorySearchInput!, $first: Int, $after: String) {
  searchMemory(workspaceId: $ws, query: $q, first: $first, after: $after) {
    edges { cursor score textScore vectorScore node { id content } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const RECORDS = `query ($ws: ID!, $filter: MemoryRecordFilterInput, $first: Int, $after: String) {
  workspace(id: $ws) { records(filter: $filter, first: $first, after: $after) {
    edges { node { id } } pageInfo { hasNextPage endCursor }
  } }
}`;
const JOBS = `query ($state: MemoryJobState, $first: Int) {
  memoryJobs(state: $state, first: $first) { edges { node { id recordId state attempts lastError } } }
}`;

async function workspace(
  p: Principal,
  input: { secretPolicy?: 'REJECT' | 'REDACT'; embeddingDimensions?: number } = {},
): Promise<string> {
  const r = await h.gql(p, CREATE_WORKSPACE, { input: { name: 'ws', ...input }, key: key() });
  return dataOf(r).createWorkspace.workspace.id as string;
}

interface PutInput {
  kind?: string;
  content?: string;
  tags?: string[];
  metadata?: string;
  embedding?: number[];
  expiresAt?: string;
}

function put(p: Principal, ws: string, input: PutInput = {}, id = randomUUID(), k = key()) {
  return h.gql(p, PUT, {
    id,
    input: { workspaceId: ws, kind: 'note', content: 'hello', ...input },
    key: k,
  });
}

async function putOk(p: Principal, ws: string, input: PutInput = {}, id = randomUUID()) {
  return dataOf(await put(p, ws, input, id)).putMemory.record as Record<string, any>;
}

async function search(p: Principal, ws: string, q: Record<string, unknown>, first = 20, after?: string) {
  return dataOf(await h.gql(p, SEARCH, { ws, q, first, after })).searchMemory as {
    edges: {
      cursor: string;
      score: number;
      textScore: number | null;
      vectorScore: number | null;
      node: any;
    }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

async function ownerCount(sql: string, params: unknown[]): Promise<number> {
  return Number(
    (await h.owner.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) x`, params)).rows[0]!.n,
  );
}

/** Every place a write can leave text behind, as one string per table. */
async function storedText(tenantId: string): Promise<string> {
  const parts: string[] = [];
  for (const sql of [
    'SELECT row_to_json(r)::text AS t FROM memory.records r WHERE tenant_id = $1',
    'SELECT row_to_json(c)::text AS t FROM memory.chunks c WHERE tenant_id = $1',
    'SELECT row_to_json(j)::text AS t FROM memory.jobs j WHERE tenant_id = $1',
    'SELECT row_to_json(k)::text AS t FROM runtime.idempotency_keys k WHERE tenant_id = $1',
  ]) {
    const r = await h.owner.query<{ t: string }>(sql, [tenantId]);
    parts.push(...r.rows.map((x) => x.t));
  }
  return parts.join('\n');
}

describe('secret filter on writes (stored rows checked)', () => {
  const secrets = {
    aws: 'AKIAIOSFODNN7EXAMPLE',
    pw: 'hunter2pass',
    card: '4111 1111 1111 1111',
    ssn: '123-45-6789',
    gh: `ghp_${'aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5'}`,
  };
  const content = `deploy key ${secrets.aws}, db postgres://app:${secrets.pw}@db/main, card ${secrets.card}`;
  const input: PutInput = {
    content,
    tags: ['ops', `ssn ${secrets.ssn}`],
    metadata: JSON.stringify({ nested: { token: secrets.gh, n: 1 } }),
  };

  it('REJECT refuses the write, names the field and detector, stores nothing', async () => {
    const p = newPrincipal();
    const ws = await workspace(p, { secretPolicy: 'REJECT' });
    const id = randomUUID();
    const r = await put(p, ws, input, id);
    expect(codeOf(r)).toBe('BAD_USER_INPUT');
    const err = r.body.errors![0]!;
    expect(err.extensions).toMatchObject({ field: 'input.content', detector: 'aws-access-key' });
    for (const s of Object.values(secrets)) expect(JSON.stringify(r.body)).not.toContain(s);
    const inMetadata = await put(p, ws, { metadata: input.metadata });
    expect(inMetadata.body.errors?.[0]?.extensions).toMatchObject({
      field: 'input.metadata.nested.token',
      detector: 'github-token',
    });
    expect(dataOf(await h.gql(p, GET, { id })).memoryRecord).toBeNull();
    await index();
    const stored = await storedText(p.tenantId);
    for (const s of Object.values(secrets)) expect(stored).not.toContain(s);
    expect(await ownerCount('SELECT 1 FROM memory.records WHERE tenant_id = $1', [p.tenantId])).toBe(0);
  });

  it('REDACT stores the write with every hit replaced, in the record, its chunks, jobs and the replay', async () => {
    const p = newPrincipal();
    const ws = await workspace(p, { secretPolicy: 'REDACT' });
    const id = randomUUID();
    const k = key();
    const rec = dataOf(await put(p, ws, input, id, k)).putMemory.record;
    expect(rec.content).toBe(
      'deploy key [REDACTED:aws-access-key], db postgres://app:[REDACTED:url-password]@db/main, card [REDACTED:card-number]',
    );
    expect(rec.tags).toEqual(['ops', 'ssn [REDACTED:us-ssn]']);
    expect(JSON.parse(rec.metadata)).toEqual({ nested: { token: '[REDACTED:github-token]', n: 1 } });
    const replay = await put(p, ws, input, id, k);
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(await index()).toMatchObject({ succeeded: 1 });
    expect(await ownerCount('SELECT 1 FROM memory.chunks WHERE record_id = $1', [id])).toBe(1);
    const stored = await storedText(p.tenantId);
    expect(stored).toContain('[REDACTED:aws-access-key]');
    for (const s of Object.values(secrets)) expect(stored).not.toContain(s);
  });
});

describe('metadata, embeddings and expiry input', () => {
  it('bounds metadata by size, depth and keys, naming the limit', async () => {
    const p = newPrincipal();
    const ws = await workspace(p);
    let deep: unknown = 1;
    for (let i = 0; i < 9; i++) deep = { d: deep };
    const manyKeys = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, i]));
    const cases: [string, string | undefined][] = [
      [JSON.stringify({ big: 'x'.repeat(16 * 1024) }), 'maxBytes'],
      [JSON.stringify(deep), 'maxDepth'],
      [JSON.stringify(manyKeys), 'maxKeys'],
      ['[1,2]', undefined],
      ['{not json', undefined],
    ];
    for (const [metadata, limit] of cases) {
      const r = await put(p, ws, { metadata });
      expect(codeOf(r), limit).toBe('BAD_USER_INPUT');
      expect(r.body.errors?.[0]?.extensions?.['field']).toBe('input.metadata');
      if (limit) {
        expect(r.body.errors?.[0]?.extensions?.['limit']).toBe(limit);
        expect(r.body.errors?.[0]?.message).toContain(limit);
      }
    }
    const ok = await putOk(p, ws, { metadata: JSON.stringify({ source: 'chat', n: [1, { a: true }] }) });
    expect(JSON.parse(ok['metadata'])).toEqual({ source: 'chat', n: [1, { a: true }] });
  });

  it('fixes the embedding dimension with the first embedding and refuses others', async () => {
    const p = newPrincipal();
    const ws = await workspace(p);
    const rec = await putOk(p, ws, { embedding: [0.5, 0.25, -1] });
    expect(rec['embedding']).toEqual([0.5, 0.25, -1]);
    const wrong = await put(p, ws, { embedding: [1, 2] });
    expect(codeOf(wrong)).toBe('BAD_USER_INPUT');
    expect(wrong.body.errors?.[0]?.extensions).toMatchObject({
      field: 'input.embedding',
      expected: 3,
      got: 2,
    });
    expect(codeOf(await put(p, ws, { embedding: [0, 0, 0] }))).toBe('BAD_USER_INPUT');
    const fixed = await workspace(p, { embeddingDimensions: 2 });
    expect(codeOf(await put(p, fixed, { embedding: [1, 2, 3] }))).toBe('BAD_USER_INPUT');
    expect(
      codeOf(await put(p, ws, { expiresAt: new Date(h.clock.now().getTime() - 1000).toISOString() })),
    ).toBe('BAD_USER_INPUT');
  });
});

describe('search', () => {
  it('ranks by full text, by embedding and by both, pages without gaps, filters, and never leaves the tenant', async () => {
    const p = newPrincipal();
    const ws = await workspace(p, { embeddingDimensions: 3 });
    const docs = [
      {
        content: 'the deployment pipeline failed on the database migration',
        embedding: [1, 0, 0],
        kind: 'incident',
      },
      { content: 'database migration database migration notes', embedding: [0.9, 0.1, 0], kind: 'note' },
      { content: 'lunch menu for friday', embedding: [0, 1, 0], kind: 'note' },
      { content: 'a migration of birds', embedding: [0, 0, 1], kind: 'note', tags: ['nature'] },
      // Long: cut into several chunks; the match sits in a late one.
      {
        content: `${'filler words here. '.repeat(40)}the database migration finally passed`,
        embedding: [0.5, 0.5, 0],
        kind: 'note',
      },
    ];
    const ids: string[] = [];
    for (const d of docs) ids.push((await putOk(p, ws, d))['id']);
    // Not searchable by text before indexing (its search data is the job's to write).
    expect((await search(p, ws, { text: 'database migration' })).edges).toEqual([]);
    await index();
    expect(await ownerCount('SELECT 1 FROM memory.chunks WHERE record_id = $1', [ids[4]])).toBeGreaterThan(1);

    const text = await search(p, ws, { text: 'database migration' });
    expect(text.edges.map((e) => e.node.id).sort()).toEqual([ids[0], ids[1], ids[4]].sort());
    expect(text.edges[0]!.node.id).toBe(ids[1]); // the denser match ranks first
    for (const e of text.edges) {
      expect(e.score).toBe(e.textScore);
      expect(e.vectorScore).toBeNull();
      expect(e.score).toBeGreaterThan(0);
      expect(e.score).toBeLessThan(1);
    }

    const vector = await search(p, ws, { embedding: [1, 0, 0] });
    // Two orthogonal records tie at 0.5: the tie breaks by id.
    expect(vector.edges.map((e) => e.node.id)).toEqual([
      ids[0],
      ids[1],
      ids[4],
      ...[ids[2]!, ids[3]!].sort(),
    ]);
    expect(vector.edges[0]!.score).toBeCloseTo(1, 6);
    expect(vector.edges[3]!.score).toBeCloseTo(0.5, 6); // orthogonal: cosine 0

    const both = await search(p, ws, { text: 'migration', embedding: [0, 0, 1], textWeight: 0.5 });
    expect(both.edges.map((e) => e.node.id)).toContain(ids[3]);
    for (const e of both.edges) expect(e.score).toBeCloseTo(0.5 * e.textScore! + 0.5 * e.vectorScore!, 12);
    expect(both.edges[0]!.node.id).toBe(ids[3]); // the birds: best vector, matching text

    // Paging: first 2 at a time gives the single-page order, no gaps or repeats; same scores tie by id.
    const all = await search(p, ws, { embedding: [1, 1, 0] });
    const paged: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await search(p, ws, { embedding: [1, 1, 0] }, 2, after);
      paged.push(...page.edges.map((e) => e.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor!;
    }
    expect(paged).toEqual(all.edges.map((e) => e.node.id));
    // The cursor belongs to that query.
    expect(codeOf(await h.gql(p, SEARCH, { ws, q: { embedding: [1, 0, 0] }, first: 2, after }))).toBe(
      'BAD_USER_INPUT',
    );

    const filtered = await search(p, ws, { text: 'migration', filter: { kind: 'note', tag: 'nature' } });
    expect(filtered.edges.map((e) => e.node.id)).toEqual([ids[3]]);
    expect(codeOf(await h.gql(p, SEARCH, { ws, q: { embedding: [1, 0] } }))).toBe('BAD_USER_INPUT');
    expect(codeOf(await h.gql(p, SEARCH, { ws, q: {} }))).toBe('BAD_USER_INPUT');

    // Another tenant with the same words sees only its own records, and not this workspace at all.
    const q = newPrincipal();
    const qws = await workspace(q, { embeddingDimensions: 3 });
    const theirs = (await putOk(q, qws, { content: 'database migration of tenant q', embedding: [1, 0, 0] }))[
      'id'
    ];
    await index();
    expect((await search(q, qws, { text: 'database migration' })).edges.map((e) => e.node.id)).toEqual([
      theirs,
    ]);
    expect((await search(q, qws, { embedding: [1, 0, 0] })).edges.map((e) => e.node.id)).toEqual([theirs]);
    expect(codeOf(await h.gql(q, SEARCH, { ws, q: { text: 'database' } }))).toBe('NOT_FOUND');
    expect((await search(p, ws, { text: 'tenant' })).edges).toEqual([]);
  });
});

describe('Workspace.records filters', () => {
  it('filters by kind, tag, author and updatedSince, in stable order, with cursors bound to the filter', async () => {
    const tenant = randomUUID();
    const alice = newPrincipal('OWNER', tenant);
    const bob = newPrincipal('OPERATOR', tenant);
    const ws = await workspace(alice);
    const a1 = (await putOk(alice, ws, { kind: 'fact', tags: ['x'] }))['id'];
    const a2 = (await putOk(alice, ws, { kind: 'note', tags: ['x', 'y'] }))['id'];
    const b1 = (await putOk(bob, ws, { kind: 'fact', tags: ['y'] }))['id'];
    const ids = async (filter: Record<string, unknown> | null) =>
      dataOf(await h.gql(alice, RECORDS, { ws, filter, first: 50 })).workspace.records.edges.map(
        (e: any) => e.node.id,
      );
    expect(await ids(null)).toEqual([b1, a2, a1]);
    expect(await ids({ kind: 'fact' })).toEqual([b1, a1]);
    expect(await ids({ tag: 'x' })).toEqual([a2, a1]);
    expect(await ids({ authorId: bob.userId })).toEqual([b1]);
    expect(await ids({ kind: 'fact', tag: 'y' })).toEqual([b1]);
    const since = (
      await h.owner.query<{ t: string }>(
        `SELECT to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t FROM memory.records WHERE id = $1`,
        [a2],
      )
    ).rows[0]!.t;
    expect(await ids({ updatedSince: since })).toEqual([b1, a2]);
    const page = dataOf(await h.gql(alice, RECORDS, { ws, filter: { kind: 'fact' }, first: 1 })).workspace
      .records;
    expect(page.pageInfo.hasNextPage).toBe(true);
    const next = dataOf(
      await h.gql(alice, RECORDS, { ws, filter: { kind: 'fact' }, first: 1, after: page.pageInfo.endCursor }),
    ).workspace.records;
    expect(next.edges.map((e: any) => e.node.id)).toEqual([a1]);
    const elsewhere = await h.gql(alice, RECORDS, {
      ws,
      filter: { kind: 'note' },
      first: 1,
      after: page.pageInfo.endCursor,
    });
    expect(codeOf(elsewhere)).toBe('BAD_USER_INPUT');
  });
});

describe('expiry', () => {
  it('hides an expired record at once from every read, lets its id be created again, and the sweeper purges it', async () => {
    const p = newPrincipal();
    const ws = await workspace(p, { embeddingDimensions: 2 });
    const id = randomUUID();
    const expiresAt = new Date(h.clock.now().getTime() + 60_000).toISOString();
    const rec = await putOk(p, ws, { content: 'ephemeral salmon', embedding: [1, 0], expiresAt }, id);
    expect(rec['expiresAt']).toBe(expiresAt);
    const keep = (await putOk(p, ws, { content: 'durable salmon', embedding: [1, 0] }))['id'];
    await index();
    expect((await search(p, ws, { text: 'salmon' })).edges).toHaveLength(2);

    h.clock.advance(60_000); // exactly at expiresAt: gone
    expect(dataOf(await h.gql(p, GET, { id })).memoryRecord).toBeNull();
    const listed = dataOf(await h.gql(p, RECORDS, { ws, first: 50 })).workspace.records.edges.map(
      (e: any) => e.node.id,
    );
    expect(listed).toEqual([keep]);
    expect((await search(p, ws, { text: 'salmon' })).edges.map((e) => e.node.id)).toEqual([keep]);
    expect((await search(p, ws, { embedding: [1, 0] })).edges.map((e) => e.node.id)).toEqual([keep]);
    const entities = dataOf(
      await h.gql(
        p,
        `query ($r: [_Any!]!) { _entities(representations: $r) { ... on MemoryRecord { id } } }`,
        {
          r: [{ __typename: 'MemoryRecord', id }],
        },
      ),
    );
    expect(entities._entities).toEqual([null]);
    expect(
      codeOf(
        await h.gql(
          p,
          `mutation ($id: ID!, $k: ID!) { deleteMemory(id: $id, idempotencyKey: $k) { deletedId } }`,
          { id, k: key() },
        ),
      ),
    ).toBe('NOT_FOUND');

    // Still stored until the sweeper runs (a second expired record, untouched by the delete above).
    const other = randomUUID();
    h.clock.advance(-60_000);
    await putOk(p, ws, { content: 'also ephemeral', expiresAt }, other);
    await index();
    h.clock.advance(60_000);
    expect(await ownerCount('SELECT 1 FROM memory.records WHERE id = $1', [other])).toBe(1);
    expect(await ownerCount('SELECT 1 FROM memory.chunks WHERE record_id = $1', [other])).toBe(1);
    expect(await sweepExpiredMemory(h.db, h.clock.now())).toBeGreaterThanOrEqual(1);
    expect(await ownerCount('SELECT 1 FROM memory.records WHERE id = $1', [other])).toBe(0);
    expect(await ownerCount('SELECT 1 FROM memory.chunks WHERE record_id = $1', [other])).toBe(0);
    expect(await ownerCount('SELECT 1 FROM memory.records WHERE id = $1', [keep])).toBe(1);

    // An expired id is free: expectedVersion 0 creates it afresh at version 1.
    const again = dataOf(
      await h.gql(p, PUT, {
        id: other,
        input: { workspaceId: ws, kind: 'note', content: 'new' },
        expectedVersion: 0,
        key: key(),
      }),
    ).putMemory;
    expect(again).toMatchObject({ created: true, record: { version: 1, content: 'new' } });
  });
});

describe('deletion', () => {
  const DELETE_MEMORY = `mutation ($id: ID!, $k: ID!) { deleteMemory(id: $id, idempotencyKey: $k) { deletedId } }`;
  const DELETE_WORKSPACE = `mutation ($id: ID!, $k: ID!) { deleteWorkspace(id: $id, idempotencyKey: $k) { deletedId recordsDeleted } }`;
  const ERASE = `mutation ($k: ID!) { eraseTenantMemory(idempotencyKey: $k) { workspacesDeleted recordsDeleted auditId erasedAt } }`;

  it('deleteMemory and deleteWorkspace remove the records with their chunks and jobs; replays are no-ops', async () => {
    const p = newPrincipal();
    const ws = await workspace(p);
    const a = (await putOk(p, ws, { content: 'word '.repeat(100) }))['id'];
    const b = (await putOk(p, ws, { content: 'other' }))['id'];
    await index();
    const c = (await putOk(p, ws, { content: 'queued, not yet indexed' }))['id'];
    expect(await ownerCount('SELECT 1 FROM memory.chunks WHERE record_id = $1', [a])).toBeGreaterThan(1);
    expect(await ownerCount('SELECT 1 FROM memory.jobs WHERE record_id = $1', [a])).toBe(1);

    const k = key();
    expect(dataOf(await h.gql(p, DELETE_MEMORY, { id: a, k })).deleteMemory).toEqual({ deletedId: a });
    const replay = await h.gql(p, DELETE_MEMORY, { id: a, k });
    expect(replay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(codeOf(await h.gql(p, DELETE_MEMORY, { id: a, k: key() }))).toBe('NOT_FOUND');
    for (const t of [
      'memory.records WHERE id',
      'memory.chunks WHERE record_id',
      'memory.jobs WHERE record_id',
    ])
      expect(await ownerCount(`SELECT 1 FROM ${t} = $1`, [a]), t).toBe(0);

    const gone = dataOf(await h.gql(p, DELETE_WORKSPACE, { id: ws, k: key() })).deleteWorkspace;
    expect(gone).toEqual({ deletedId: ws, recordsDeleted: 2 });
    for (const id of [b, c]) {
      expect(await ownerCount('SELECT 1 FROM memory.records WHERE id = $1', [id])).toBe(0);
      expect(await ownerCount('SELECT 1 FROM memory.chunks WHERE record_id = $1', [id])).toBe(0);
      expect(await ownerCount('SELECT 1 FROM memory.jobs WHERE record_id = $1', [id])).toBe(0);
    }
    expect(
      dataOf(await h.gql(p, `query ($id: ID!) { workspace(id: $id) { id } }`, { id: ws })).workspace,
    ).toBeNull();
  });

  it('eraseTenantMemory (OWNER/ADMIN) removes every memory row of the tenant and writes an audit record', async () => {
    const tenant = randomUUID();
    const admin = newPrincipal('ADMIN', tenant);
    const operator = newPrincipal('OPERATOR', tenant);
    const other = newPrincipal();
    const ws1 = await workspace(admin);
    const ws2 = await workspace(operator);
    for (const ws of [ws1, ws2])
      for (let i = 0; i < 2; i++) await putOk(admin, ws, { content: `erase me ${i}` });
    const otherWs = await workspace(other);
    const kept = (await putOk(other, otherWs))['id'];
    await index();

    expect(codeOf(await h.gql(operator, ERASE, { k: key() }))).toBe('FORBIDDEN');
    const erased = dataOf(await h.gql(admin, ERASE, { k: key() })).eraseTenantMemory;
    expect(erased).toMatchObject({ workspacesDeleted: 2, recordsDeleted: 4 });
    for (const t of ['memory.workspaces', 'memory.records', 'memory.chunks', 'memory.jobs'])
      expect(await ownerCount(`SELECT 1 FROM ${t} WHERE tenant_id = $1`, [tenant]), t).toBe(0);
    const audit = await h.owner.query<{ actor: string; action: string; details: Record<string, unknown> }>(
      'SELECT actor, action, details FROM memory.audit WHERE tenant_id = $1 AND id = $2',
      [tenant, erased.auditId],
    );
    expect(audit.rows).toEqual([
      {
        actor: admin.userId,
        action: 'ERASE_TENANT_MEMORY',
        // createWorkspace ×2 and putMemory ×4: their stored answers (the refused erase stored none).
        details: { workspacesDeleted: 2, recordsDeleted: 4, idempotentResponsesErased: 6, role: 'ADMIN' },
      },
    ]);
    expect(dataOf(await h.gql(other, GET, { id: kept })).memoryRecord).not.toBeNull();
    // The app role may add audit rows but never change or remove them.
    await expect(
      h.db.transaction((tx) => tx.query('DELETE FROM memory.audit'), {
        'app.tenant_id': tenant,
        'app.principal_id': 'x',
      }),
    ).rejects.toThrow(/permission denied/);
  });
});

describe('eraseTenantMemory and stored idempotent answers', () => {
  const ERASE = `mutation ($k: ID!) { eraseTenantMemory(idempotencyKey: $k) { workspacesDeleted recordsDeleted auditId erasedAt } }`;
  const DELETE_MEMORY = `mutation ($id: ID!, $k: ID!) { deleteMemory(id: $id, idempotencyKey: $k) { deletedId } }`;

  it('lists every memory mutation but the erase itself', () => {
    const mutations = Object.keys(createResolvers({ now: () => new Date() }).Mutation ?? {});
    expect([...TENANT_ERASE_OPERATIONS].sort()).toEqual(
      mutations
        .filter((m) => m !== 'eraseTenantMemory')
        .map((m) => `Mutation.${m}`)
        .sort(),
    );
  });

  it("forgets the answers of every principal of the tenant: a replay is NOT_FOUND and writes nothing; other tenants' replay", async () => {
    const tenant = randomUUID();
    const admin = newPrincipal('ADMIN', tenant);
    const operator = newPrincipal('OPERATOR', tenant);
    const other = newPrincipal();
    const wsName = 'Workspace of patient Jane Roe';
    const ws = dataOf(await h.gql(admin, CREATE_WORKSPACE, { input: { name: wsName }, key: key() }))
      .createWorkspace.workspace.id as string;
    const puts = [
      { p: admin, id: randomUUID(), k: key(), content: 'Jane Roe takes 20 mg of something every morning' },
      { p: operator, id: randomUUID(), k: key(), content: 'Jane Roe lives at 12 Quiet Street' },
    ];
    for (const x of puts) dataOf(await put(x.p, ws, { content: x.content }, x.id, x.k));
    const deleted = await putOk(operator, ws, { content: 'short-lived' });
    dataOf(await h.gql(operator, DELETE_MEMORY, { id: deleted['id'], k: key() }));
    const otherWs = await workspace(other);
    const otherPut = { id: randomUUID(), k: key(), content: 'Tenant B keeps this note' };
    const otherFirst = await put(other, otherWs, { content: otherPut.content }, otherPut.id, otherPut.k);
    dataOf(otherFirst);
    await index(); // the tests below count the jobs they run: leave none queued
    // Before: the answers hold the content, for whoever looks at the table.
    expect(await storedText(tenant)).toContain('Jane Roe');

    const eraseKey = key();
    const erased = dataOf(await h.gql(admin, ERASE, { k: eraseKey })).eraseTenantMemory;
    expect(erased).toMatchObject({ workspacesDeleted: 1, recordsDeleted: 2 });

    // Nothing of what was written is left in the tenant's rows, idempotency keys included (read as the owner).
    const left = await storedText(tenant);
    expect(left).not.toContain('Jane Roe');
    expect(left).not.toContain('short-lived');
    const keys = await h.owner.query<{
      operation: string;
      response: Record<string, unknown>;
      erased: boolean;
    }>(
      `SELECT operation, response, erased_at IS NOT NULL AS erased FROM runtime.idempotency_keys
        WHERE tenant_id = $1 ORDER BY operation, created_at`,
      [tenant],
    );
    const tombstone = { erased: true, erasedAt: erased.erasedAt };
    expect(keys.rows).toEqual([
      { operation: 'Mutation.createWorkspace', response: tombstone, erased: true },
      { operation: 'Mutation.deleteMemory', response: tombstone, erased: true },
      { operation: 'Mutation.eraseTenantMemory', response: erased, erased: false },
      ...[1, 2, 3].map(() => ({ operation: 'Mutation.putMemory', response: tombstone, erased: true })),
    ]);
    const audit = await h.owner.query<{ details: Record<string, unknown> }>(
      'SELECT details FROM memory.audit WHERE tenant_id = $1 AND id = $2',
      [tenant, erased.auditId],
    );
    expect(audit.rows[0]?.details).toMatchObject({ idempotentResponsesErased: 5 });

    // A replay (an outbox retrying, say) gets neither the old answer nor a second write; it is told why.
    for (const x of puts) {
      const replay = await put(x.p, ws, { content: x.content }, x.id, x.k);
      expect(codeOf(replay)).toBe('NOT_FOUND');
      expect(replay.body.data).toBeNull();
      const error = replay.body.errors![0]!;
      expect(error.message).toMatch(/removed by a tenant-wide erase.*new idempotency key/);
      expect(JSON.stringify(replay.body)).not.toContain('Jane Roe');
      expect(error.extensions).toMatchObject({ idempotentResponseErased: true, erasedAt: erased.erasedAt });
      expect(dataOf(await h.gql(x.p, GET, { id: x.id })).memoryRecord).toBeNull();
    }
    expect(await ownerCount('SELECT 1 FROM memory.records WHERE tenant_id = $1', [tenant])).toBe(0);
    expect(await ownerCount('SELECT 1 FROM memory.workspaces WHERE tenant_id = $1', [tenant])).toBe(0);

    // The erase replays its own answer; the other tenant's keys replay as before.
    const eraseReplay = await h.gql(admin, ERASE, { k: eraseKey });
    expect(eraseReplay.body).toEqual({
      data: { eraseTenantMemory: erased },
      extensions: { idempotentReplay: true },
    });
    const otherReplay = await put(other, otherWs, { content: otherPut.content }, otherPut.id, otherPut.k);
    expect(otherReplay.body.data).toEqual(otherFirst.body.data);
    expect(otherReplay.body.extensions?.['idempotentReplay']).toBe(true);
    expect(await storedText(other.tenantId)).toContain('Tenant B keeps this note');
  });
});

describe('indexing jobs', () => {
  it('sends a poison job to DEAD after 3 attempts with backoff while the others succeed; admins see it', async () => {
    const tenant = randomUUID();
    const owner = newPrincipal('OWNER', tenant);
    const ws = await workspace(owner);
    const bad = randomUUID();
    poisoned.add(bad);
    const good: string[] = [];
    for (let i = 0; i < 3; i++) good.push((await putOk(owner, ws, { content: `fine ${i}` }))['id']);
    await putOk(owner, ws, { content: 'poison' }, bad);
    good.push((await putOk(owner, ws, { content: 'fine 3' }))['id']);

    const first = await index();
    expect(first).toMatchObject({ succeeded: 4, failed: 1, dead: 0 });
    const jobOf = async (recordId: string) =>
      (
        await h.owner.query<{ state: string; attempts: number; last_error: string; run_after: Date }>(
          'SELECT state, attempts, last_error, run_after FROM memory.jobs WHERE record_id = $1',
          [recordId],
        )
      ).rows;
    expect(await jobOf(bad)).toMatchObject([
      { state: 'FAILED', attempts: 1, last_error: 'Error: injected indexing failure' },
    ]);
    // Not due before its backoff (1 s, then 4 s).
    expect(await index()).toMatchObject({ succeeded: 0, failed: 0, dead: 0 });
    h.clock.advance(1000);
    expect(await index()).toMatchObject({ failed: 1, dead: 0 });
    h.clock.advance(3999);
    expect(await index()).toMatchObject({ failed: 0, dead: 0 });
    h.clock.advance(1);
    expect(await index()).toMatchObject({ failed: 0, dead: 1 });
    expect(await jobOf(bad)).toMatchObject([{ state: 'DEAD', attempts: 3 }]);
    h.clock.advance(3_600_000);
    expect(await index()).toMatchObject({ succeeded: 0, failed: 0, dead: 0 });
    for (const id of good) expect(await jobOf(id)).toMatchObject([{ state: 'SUCCEEDED', attempts: 1 }]);

    const dead = dataOf(await h.gql(owner, JOBS, { state: 'DEAD', first: 10 })).memoryJobs.edges.map(
      (e: any) => e.node,
    );
    expect(dead).toEqual([
      {
        id: expect.any(String),
        recordId: bad,
        state: 'DEAD',
        attempts: 3,
        lastError: 'Error: injected indexing failure',
      },
    ]);
    expect(dataOf(await h.gql(owner, JOBS, { state: 'SUCCEEDED', first: 10 })).memoryJobs.edges).toHaveLength(
      4,
    );
    expect(codeOf(await h.gql(newPrincipal('OPERATOR', tenant), JOBS, {}))).toBe('FORBIDDEN');
    expect(dataOf(await h.gql(newPrincipal(), JOBS, { first: 10 })).memoryJobs.edges).toEqual([]);

    // The job as an entity reference: its tenant's admins see it, another tenant's admin gets null.
    const ENTITY = `query ($r: [_Any!]!) { _entities(representations: $r) { ... on MemoryJob { id state } } }`;
    const r = [{ __typename: 'MemoryJob', id: dead[0].id }];
    expect(dataOf(await h.gql(owner, ENTITY, { r }))._entities).toEqual([{ id: dead[0].id, state: 'DEAD' }]);
    expect(dataOf(await h.gql(newPrincipal(), ENTITY, { r }))._entities).toEqual([null]);

    // A new write of the poisoned record queues a fresh job; once healed it succeeds.
    poisoned.delete(bad);
    await putOk(owner, ws, { content: 'healed' }, bad);
    expect(await index()).toMatchObject({ succeeded: 1 });
  });
});

describe('indexing workers in parallel', () => {
  it('claim disjoint jobs (SKIP LOCKED): every job runs exactly once', async () => {
    const p = newPrincipal();
    const ws = await workspace(p);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await putOk(p, ws, { content: `parallel ${i}` }))['id']);
    const passes = await Promise.all(
      [0, 1, 2].map(() => runIndexingJobs(h.db, { now: h.clock.now, batch: 2, chunking })),
    );
    expect(passes.reduce((n, x) => n + x.succeeded, 0)).toBe(6);
    const jobs = await h.owner.query<{ state: string; attempts: number }>(
      'SELECT state, attempts FROM memory.jobs WHERE record_id = ANY($1::uuid[])',
      [ids],
    );
    expect(jobs.rows).toEqual(ids.map(() => ({ state: 'SUCCEEDED', attempts: 1 })));
  });
});

describe('indexing under concurrent writes and deletes', () => {
  it('never deadlocks and leaves exactly the chunks of the final content', async () => {
    const p = newPrincipal();
    const ws = await workspace(p);
    for (let round = 0; round < 3; round++) {
      const id = (await putOk(p, ws, { content: 'alpha '.repeat(120) }))['id'];
      await index();
      const runs = await Promise.all([
        put(p, ws, { content: 'beta '.repeat(150) }, id),
        runIndexingJobs(h.db, { now: h.clock.now, chunking }),
        put(p, ws, { content: 'gamma '.repeat(90) }, id),
        runIndexingJobs(h.db, { now: h.clock.now, chunking }),
      ]);
      expect(codeOf(runs[0] as never)).toBeUndefined();
      expect(codeOf(runs[2] as never)).toBeUndefined();
      await index();
      const rec = dataOf(await h.gql(p, GET, { id })).memoryRecord;
      const chunks = await h.owner.query<{ content: string }>(
        'SELECT content FROM memory.chunks WHERE record_id = $1 ORDER BY n',
        [id],
      );
      expect(chunks.rows.length).toBeGreaterThan(1);
      for (const c of chunks.rows) expect(rec.content).toContain(c.content);
      // And a delete racing an indexer.
      await put(p, ws, { content: 'delta '.repeat(100) }, id);
      const [deleted] = await Promise.all([
        h.gql(p, `mutation ($id: ID!, $k: ID!) { deleteMemory(id: $id, idempotencyKey: $k) { deletedId } }`, {
          id,
          k: key(),
        }),
        runIndexingJobs(h.db, { now: h.clock.now, chunking }),
      ]);
      expect(codeOf(deleted)).toBeUndefined();
      expect(await ownerCount('SELECT 1 FROM memory.chunks WHERE record_id = $1', [id])).toBe(0);
    }
  });
});

describe('indexing leases', () => {
  it('claims again a job whose worker died (lease ran out), counting the attempt', async () => {
    const p = newPrincipal();
    const ws = await workspace(p);
    const id = (await putOk(p, ws, { content: 'orphaned' }))['id'];
    // A worker claims it and dies before finishing.
    const claimed = await h.db.query<{ job_record_id: string }>(
      'SELECT * FROM memory.claim_jobs($1, 100, 60)',
      [h.clock.now().toISOString()],
    );
    expect(claimed.rows.map((c) => c.job_record_id)).toContain(id);
    expect(await index()).toMatchObject({ succeeded: 0 }); // leased: not due
    h.clock.advance(60_000);
    expect((await index()).succeeded).toBeGreaterThanOrEqual(1);
    const job = await h.owner.query<{ state: string; attempts: number }>(
      'SELECT state, attempts FROM memory.jobs WHERE record_id = $1',
      [id],
    );
    expect(job.rows).toEqual([{ state: 'SUCCEEDED', attempts: 2 }]);
  });
});

describe('tenant isolation on every id-taking field', () => {
  it("answers NOT_FOUND or null for another tenant's ids and changes nothing of theirs", async () => {
    const a = newPrincipal();
    const b = newPrincipal();
    const ws = await workspace(a, { embeddingDimensions: 2 });
    const id = (await putOk(a, ws, { content: 'private words', embedding: [1, 0] }))['id'];
    await index();
    const k = () => key();
    expect(dataOf(await h.gql(b, GET, { id })).memoryRecord).toBeNull();
    expect(
      dataOf(await h.gql(b, `query ($id: ID!) { workspace(id: $id) { id } }`, { id: ws })).workspace,
    ).toBeNull();
    expect(codeOf(await put(b, ws))).toBe('NOT_FOUND');
    expect(codeOf(await put(b, ws, {}, id))).toBe('NOT_FOUND');
    expect(codeOf(await h.gql(b, SEARCH, { ws, q: { text: 'private' } }))).toBe('NOT_FOUND');
    expect(codeOf(await h.gql(b, SEARCH, { ws, q: { embedding: [1, 0] } }))).toBe('NOT_FOUND');
    expect(
      codeOf(
        await h.gql(
          b,
          `mutation ($id: ID!, $k: ID!) { deleteMemory(id: $id, idempotencyKey: $k) { deletedId } }`,
          { id, k: k() },
        ),
      ),
    ).toBe('NOT_FOUND');
    expect(
      codeOf(
        await h.gql(
          b,
          `mutation ($id: ID!, $k: ID!) { deleteWorkspace(id: $id, idempotencyKey: $k) { deletedId } }`,
          {
            id: ws,
            k: k(),
          },
        ),
      ),
    ).toBe('NOT_FOUND');
    // B's own erasure touches nothing of A's.
    dataOf(
      await h.gql(b, `mutation ($k: ID!) { eraseTenantMemory(idempotencyKey: $k) { recordsDeleted } }`, {
        k: k(),
      }),
    );
    const still = dataOf(await h.gql(a, GET, { id })).memoryRecord;
    expect(still).toMatchObject({ id, version: 1, content: 'private words' });
    expect((await search(a, ws, { text: 'private' })).edges.map((e) => e.node.id)).toEqual([id]);
  });
});
