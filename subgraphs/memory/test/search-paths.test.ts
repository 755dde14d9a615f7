/**
 * The search paths of migration 005 (issue 18, items 1 and 2), as the memory service's own role (RLS forced):
 * - full-text goes through memory.text_matches and uses the GIN index chunks_tsv, not a scan of the tenant's chunks
 *   (EXPLAIN of the search as the service role; the index and table scan counters of that very transaction; the
 *   function body's plan in its definer context), and a tenant never sees another tenant's chunks through it;
 * - vector search uses the HNSW index where pgvector exists (PGlite always) and gives the exact scan's top-k on
 *   exact-search settings (ef_search above the number of records), text, vector, hybrid and page 2 alike; where
 *   pgvector does not exist (Debian's PostgreSQL 15) the exact scan serves (in process, EXACT_IN_MEMORY:
 *   vector-copy.test.ts; or in SQL), and the capability says so.
 * Data is seeded with SQL in the tenant's transaction (the columns and chunks the indexing job writes), as the
 * bench does, so the planner has enough rows to prefer an index.
 */
import type { Database, Queryable } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPrincipal, type Principal } from '../../../test/src/subgraph-harness.js';
import type { WorkspaceModel } from '../src/models.js';
import { hnswDimensions, searchCapabilities, searchRecords, type SearchParams } from '../src/search.js';
import { findWorkspace } from '../src/store.js';
import { key, searchParams as params, startMemoryHarness, type MemoryHarness } from './harness.js';

let h: MemoryHarness;
const a = newPrincipal();
const b = newPrincipal();
const DIM = 8;
const RECORDS = 1500;
let wsA: string;
let wsB: string;

/** Seeded pseudo-random numbers (the same data every run). */
let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
/** 3000 words: a word is in about 0.4 % of the records, selective enough that an index beats a scan. */
const WORDS = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}x`);
const sentence = (n: number) =>
  Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
const vector = (dim = DIM) => Array.from({ length: dim }, () => random() * 2 - 1);

const tenantTx = <T>(p: Principal, fn: (tx: Queryable) => Promise<T>) =>
  h.db.transaction(fn, { 'app.tenant_id': p.tenantId, 'app.principal_id': p.userId });

async function createWorkspace(p: Principal, dim: number): Promise<string> {
  const r = await h.gql(
    p,
    `mutation ($k: ID!, $d: Int) { createWorkspace(input: { name: "search", embeddingDimensions: $d }, idempotencyKey: $k) { workspace { id } } }`,
    { k: key(), d: dim },
  );
  expect(r.body.errors).toBeUndefined();
  return (r.body.data!['createWorkspace'] as { workspace: { id: string } }).workspace.id;
}

async function seed_(p: Principal, ws: string, n: number, dim: number, content?: string): Promise<void> {
  const contents = Array.from({ length: n }, () => content ?? sentence(12));
  const embeddings = Array.from({ length: n }, () => `{${vector(dim).join(',')}}`);
  await tenantTx(p, (tx) =>
    tx.query(
      `WITH input AS (
         SELECT gen_random_uuid() AS id, c AS content, e::real[] AS embedding FROM unnest($3::text[], $4::text[]) AS t(c, e)
       ), ins AS (
         INSERT INTO memory.records (tenant_id, id, workspace_id, kind, content, tags, version, author, embedding,
                                     embedding_norm)
         SELECT $1, i.id, $2, 'note', i.content, ARRAY['t'], 1, 'seed', i.embedding,
                (SELECT sqrt(sum(x::float8 * x::float8)) FROM unnest(i.embedding) x)
           FROM input i
         RETURNING id, content
       )
       INSERT INTO memory.chunks (tenant_id, record_id, n, record_version, content)
       SELECT $1, ins.id, 0, 1, ins.content FROM ins`,
      [p.tenantId, ws, contents, embeddings],
    ),
  );
}

const workspace = (p: Principal, id: string): Promise<WorkspaceModel> =>
  tenantTx(p, async (tx) => (await findWorkspace(tx, id))!);

/** Every statement a search sends, to EXPLAIN the same SQL with the same parameters afterwards. */
function recording(tx: Queryable, log: { sql: string; params: unknown[] }[]): Queryable {
  return {
    query(sql, params = []) {
      log.push({ sql, params });
      return tx.query(sql, params);
    },
  };
}

async function explain(tx: Queryable, sql: string, params: unknown[]): Promise<string> {
  const r = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
  return r.rows.map((row) => row['QUERY PLAN']).join('\n');
}

let hasVector = false;

beforeAll(async () => {
  h = await startMemoryHarness();
  wsA = await createWorkspace(a, DIM);
  wsB = await createWorkspace(b, DIM);
  // Tenant B's second workspace, of another dimension (an HNSW index of its own; never reached by A's search).
  const wsB2 = await createWorkspace(b, DIM * 2);
  await seed_(a, wsA, RECORDS, DIM);
  await seed_(b, wsB, RECORDS, DIM);
  await seed_(b, wsB2, 50, DIM * 2);
  // A word only tenant B's records hold, and one both tenants' hold.
  await seed_(b, wsB, 5, DIM, 'zanzibarite onlyinbee');
  await seed_(a, wsA, 5, DIM, 'zanzibarite');
  // What autovacuum would have done on a live server: statistics, and the GIN index's pending list merged into the
  // index (a bulk insert leaves its entries there, and the planner then rightly prices the index as a scan).
  await h.owner.query('ANALYZE memory.records');
  await h.owner.query('ANALYZE memory.chunks');
  await h.owner.query(`SELECT gin_clean_pending_list('memory.chunks_tsv'::regclass)`);
  const r = await h.owner.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'vector'",
  );
  hasVector = r.rows[0]!.n === 1;
}, 300_000);

afterAll(async () => {
  await h?.close();
});

describe('full-text under forced RLS', () => {
  it('uses the GIN index chunks_tsv as the memory service role, not a scan of the chunks', async () => {
    const ws = await workspace(a, wsA);
    const word = WORDS[7]!;
    await tenantTx(a, async (tx) => {
      const counters = async () =>
        (
          await tx.query<{ index_scans: string; table_scans: string }>(
            `SELECT pg_stat_get_xact_numscans('memory.chunks_tsv'::regclass) AS index_scans,
                    pg_stat_get_xact_numscans('memory.chunks'::regclass) AS table_scans`,
          )
        ).rows[0]!;
      const before = await counters();
      const log: { sql: string; params: unknown[] }[] = [];
      const hits = await searchRecords(recording(tx, log), ws, params({ text: word }), 10, null, new Date());
      const after = await counters();
      expect(hits.length).toBeGreaterThan(0);
      expect(hits.every((hit) => hit.node.record.content.split(' ').includes(word))).toBe(true);
      // This transaction, as the memory role: the search scanned chunks_tsv and never the chunks table.
      expect(Number(after.index_scans)).toBeGreaterThan(Number(before.index_scans));
      expect(Number(after.table_scans)).toBe(Number(before.table_scans));
      // The plan as the memory role: the chunks are reached only through the definer function.
      const plan = await explain(tx, log.at(-1)!.sql, log.at(-1)!.params);
      expect(plan).toMatch(/Function Scan on text_matches/);
      expect(plan).not.toMatch(/Seq Scan on chunks/);
      // The role itself may not read the chunks the plain way without a tenant filter first: the same predicate
      // straight on the table is the RLS-bound scan the function exists to avoid.
      const direct = await explain(
        tx,
        `SELECT c.record_id FROM memory.chunks c WHERE c.tsv @@ websearch_to_tsquery('english', $1)`,
        [word],
      );
      expect(direct).not.toMatch(/Bitmap Index Scan on chunks_tsv/);
    });
  });

  it("plans each function's installed body with chunks_tsv in its definer context, ranking chunks where read", async () => {
    // The harness types the owner as Queryable; the handle's owner also has transactions (runtime's DatabaseHandle).
    const owner = h.owner as Queryable & { transaction: Database['transaction'] };
    const bodies = await h.owner.query<{ fn: string; src: string }>(
      `SELECT p.proname::text AS fn, p.prosrc AS src FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'memory' AND p.proname IN ('text_matches', 'tenant_text_matches', 'tenant_chunk_matches')
        ORDER BY 1`,
    );
    expect(bodies.rows.map((r) => r.fn)).toEqual([
      'tenant_chunk_matches',
      'tenant_text_matches',
      'text_matches',
    ]);
    for (const { fn, src } of bodies.rows) {
      // The body as installed, its parameters bound as the call binds them.
      const workspaceBound = src.includes('p_workspace_id');
      const sql = src
        .replaceAll('p_workspace_id', '$2::uuid')
        .replaceAll('p_query', "websearch_to_tsquery('english', $1::text)");
      const plan = await owner.transaction(
        async (tx) => {
          // The planner picks a full scan for a table this small; the test is what the index makes possible.
          await tx.query('SET LOCAL enable_seqscan = off');
          const r = await tx.query<{ 'QUERY PLAN': string }>(
            `EXPLAIN VERBOSE ${sql}`,
            workspaceBound ? [WORDS[7], wsA] : [WORDS[7]],
          );
          return r.rows.map((row) => row['QUERY PLAN']).join('\n');
        },
        { 'app.tenant_id': a.tenantId, 'app.principal_id': a.userId },
      );
      expect(plan, fn).toMatch(/Bitmap Index Scan on (memory\.)?chunks_tsv/);
      // No node above the chunks' scan is handed a chunk's tsvector (a bare `tsv` column in its input): the rank is
      // computed where the chunk is read, and sorts and aggregates move (record, rank) pairs. The bodies of
      // migrations 005 and 007 sorted every matching chunk's tsvector by record before ranking it in the aggregate,
      // which spilled to disk at 20,000 matches (migration 008).
      const lines = plan.split('\n');
      const scan = lines.findIndex((l) => /Bitmap Heap Scan on (memory\.)?chunks/.test(l));
      // (tenant_chunk_matches has nothing above it: the scan is the plan's first line.)
      expect(scan, plan).toBeGreaterThanOrEqual(0);
      const outputs = lines.slice(0, scan).filter((l) => /^\s*Output:/.test(l));
      const bareTsv = /(:|,) *(c\.)?tsv *(,|$)/;
      expect(
        outputs.filter((o) => bareTsv.test(o)),
        plan,
      ).toEqual([]);
      // The tenant is computed once (an InitPlan), not in a filter on every chunk read: current_setting and its
      // uuid cast per chunk were ~10 ms of a 50 ms call at 20,000 matches (migration 010).
      expect(plan, fn).toMatch(/InitPlan/);
      expect(
        lines.filter((l) => /^\s*(Filter|Recheck Cond|Join Filter|Hash Cond):.*current_setting/.test(l)),
        plan,
      ).toEqual([]);
    }
  });

  it("never returns another tenant's chunks, whatever workspace id it is handed", async () => {
    const matches = (p: Principal | null, ws: string, word: string) =>
      h.db.transaction(
        async (tx) =>
          (
            await tx.query<{ record_id: string }>(
              `SELECT m.record_id, r.tenant_id FROM memory.text_matches($1, websearch_to_tsquery('english', $2)) m
                 LEFT JOIN memory.records r ON r.id = m.record_id`,
              [ws, word],
            )
          ).rows,
        p ? { 'app.tenant_id': p.tenantId, 'app.principal_id': p.userId } : {},
      );
    // B's own word, in B's workspace: B sees its 5; A, handed B's workspace id, sees nothing; nobody without a
    // tenant set sees anything.
    expect(await matches(b, wsB, 'onlyinbee')).toHaveLength(5);
    expect(await matches(a, wsB, 'onlyinbee')).toEqual([]);
    expect(await matches(null, wsB, 'onlyinbee')).toEqual([]);
    // A word both hold: each tenant gets its own 5 only (every id resolves under its own RLS).
    for (const [p, ws] of [
      [a, wsA],
      [b, wsB],
    ] as const) {
      const rows = await matches(p, ws, 'zanzibarite');
      expect(rows).toHaveLength(5);
      expect(rows.every((row) => (row as { tenant_id?: string }).tenant_id === p.tenantId)).toBe(true);
    }
    // The tenant-wide chunk matches hybrid reads for the in-process copy: the caller's tenant only, from the
    // transaction's setting; none without one.
    const chunkMatches = (p: Principal | null, word: string) =>
      h.db.transaction(
        async (tx) =>
          (
            await tx.query<{ tenant_id: string | null }>(
              `SELECT r.tenant_id FROM memory.tenant_chunk_matches(websearch_to_tsquery('english', $1)) m
                 LEFT JOIN memory.records r ON r.id = m.record_id`,
              [word],
            )
          ).rows,
        p ? { 'app.tenant_id': p.tenantId, 'app.principal_id': p.userId } : {},
      );
    expect(await chunkMatches(a, 'onlyinbee')).toEqual([]);
    expect(await chunkMatches(null, 'zanzibarite')).toEqual([]);
    for (const p of [a, b])
      expect(await chunkMatches(p, 'zanzibarite')).toEqual(Array(5).fill({ tenant_id: p.tenantId }));
    // And through the API: B searching A's workspace is NOT_FOUND; B's own search holds B's records only.
    const q = `query ($ws: ID!, $t: String) { searchMemory(workspaceId: $ws, query: { text: $t }, first: 50) { edges { node { id content } } } }`;
    const foreign = await h.gql(b, q, { ws: wsA, t: 'zanzibarite' });
    expect(foreign.body.errors?.[0]?.extensions?.['code']).toBe('NOT_FOUND');
    const own = await h.gql(b, q, { ws: wsB, t: 'zanzibarite' });
    const edges = (own.body.data!['searchMemory'] as { edges: { node: { content: string } }[] }).edges;
    expect(edges.map((e) => e.node.content)).toEqual(Array(5).fill('zanzibarite onlyinbee'));
  });

  it('may not be called by PUBLIC, nor may its tenant-wide siblings, and its trigger sibling by nobody but the owner', async () => {
    const r = await h.owner.query<{ fn: string; public_exec: boolean }>(
      `SELECT p.proname AS fn, has_function_privilege('public', p.oid, 'EXECUTE') AS public_exec
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'memory'
          AND p.proname IN ('text_matches', 'tenant_text_matches', 'tenant_chunk_matches', 'ensure_vector_index')
        ORDER BY 1`,
    );
    expect(r.rows).toEqual([
      { fn: 'ensure_vector_index', public_exec: false },
      { fn: 'tenant_chunk_matches', public_exec: false },
      { fn: 'tenant_text_matches', public_exec: false },
      { fn: 'text_matches', public_exec: false },
    ]);
  });
});

describe('vector search paths', () => {
  it('says which path serves a workspace: HNSW_INDEX where pgvector exists, else EXACT_IN_MEMORY', async () => {
    // The harness's memory service keeps in-process copies (the default budget).
    const caps = searchCapabilities(
      (await tenantTx(a, (tx) => hnswDimensions(tx, [DIM, DIM * 2, 3000]))).get(DIM) === true,
      true,
    );
    expect(searchCapabilities(false, false).vectorSearch).toBe('EXACT_SCAN');
    // A dimension above HNSW's 2000 never has an index.
    expect((await tenantTx(a, (tx) => hnswDimensions(tx, [3000]))).get(3000)).toBe(false);
    if (h.driver === 'pglite') expect(hasVector).toBe(true);
    expect(caps).toEqual(
      hasVector
        ? { vectorSearch: 'HNSW_INDEX', vectorExact: false, fullText: 'INDEXED' }
        : { vectorSearch: 'EXACT_IN_MEMORY', vectorExact: true, fullText: 'INDEXED' },
    );
    // Through the API too.
    const r = await h.gql(
      a,
      `query ($id: ID!) { workspace(id: $id) { searchCapabilities { vectorSearch vectorExact fullText } } }`,
      { id: wsA },
    );
    expect(r.body.errors).toBeUndefined();
    expect((r.body.data!['workspace'] as { searchCapabilities: unknown }).searchCapabilities).toEqual(caps);
    const indexes = await h.owner.query<{ name: string }>(
      `SELECT indexname AS name FROM pg_indexes WHERE schemaname = 'memory' AND indexname LIKE 'records_hnsw_%' ORDER BY 1`,
    );
    expect(indexes.rows.map((x) => x.name)).toEqual(
      hasVector ? [`records_hnsw_${DIM * 2}`, `records_hnsw_${DIM}`] : [],
    );
  });

  it('orders by the HNSW index as the memory role where pgvector exists (else scans exactly)', async () => {
    const ws = await workspace(a, wsA);
    await tenantTx(a, async (tx) => {
      const log: { sql: string; params: unknown[] }[] = [];
      const hits = await searchRecords(
        recording(tx, log),
        ws,
        params({ embedding: vector() }),
        10,
        null,
        new Date(),
      );
      expect(hits).toHaveLength(10);
      const plan = await explain(tx, log.at(-1)!.sql, log.at(-1)!.params);
      if (hasVector) expect(plan).toMatch(new RegExp(`Index Scan using records_hnsw_${DIM} on records`));
      else expect(plan).not.toMatch(/records_hnsw/);
    });
  });

  it('gives the exact top-k on the HNSW path with exact-search settings (vector, hybrid, page 2)', async () => {
    if (!hasVector) {
      // Without pgvector there is one path; forcing the other must fail loudly, not fall back silently.
      const ws = await workspace(a, wsA);
      await expect(
        tenantTx(a, (tx) =>
          searchRecords(tx, ws, params({ embedding: vector() }), 10, null, new Date(), {
            vectorPath: 'HNSW_INDEX',
          }),
        ),
      ).rejects.toThrow();
      return;
    }
    const ws = await workspace(a, wsA);
    const run = (
      q: SearchParams,
      path: 'HNSW_INDEX' | 'EXACT_SCAN',
      after: { value: string; id: string } | null,
    ) =>
      tenantTx(a, (tx) =>
        searchRecords(tx, ws, q, 10, after, new Date(), { vectorPath: path, efSearch: 1000 }),
      );
    for (let i = 0; i < 5; i++) {
      for (const q of [
        params({ embedding: vector() }),
        params({ text: WORDS.slice(i * 8, i * 8 + 8).join(' or '), embedding: vector(), textWeight: 0.3 }),
      ]) {
        const exact = await run(q, 'EXACT_SCAN', null);
        const hnsw = await run(q, 'HNSW_INDEX', null);
        expect(exact).toHaveLength(10);
        expect(hnsw.map((x) => x.node.record.id)).toEqual(exact.map((x) => x.node.record.id));
        hnsw.forEach((x, n) => expect(x.node.score).toBeCloseTo(exact[n]!.node.score, 5));
        // Page 2, each path from its own last key.
        const exact2 = await run(q, 'EXACT_SCAN', exact.at(-1)!.key);
        const hnsw2 = await run(q, 'HNSW_INDEX', hnsw.at(-1)!.key);
        expect(hnsw2.map((x) => x.node.record.id)).toEqual(exact2.map((x) => x.node.record.id));
      }
    }
  });

  it("scans exactly with cube_distance where pgvector is missing: the SQL dot product's top-k and scores", async () => {
    const column = await h.owner.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_attribute
        WHERE attrelid = 'memory.records'::regclass AND attname = 'embedding_c' AND NOT attisdropped`,
    );
    // Migration 006 adds the cube column only where pgvector is missing (Debian's PostgreSQL has cube in contrib).
    expect(column.rows[0]!.n).toBe(hasVector ? 0 : 1);
    if (hasVector) return;
    const ws = await workspace(a, wsA);
    const run = (q: SearchParams, exactCube: boolean, after: { value: string; id: string } | null) =>
      tenantTx(a, async (tx) => {
        const log: { sql: string; params: unknown[] }[] = [];
        const hits = await searchRecords(recording(tx, log), ws, q, 10, after, new Date(), { exactCube });
        expect(log.at(-1)!.sql.includes('cube_distance')).toBe(exactCube);
        return hits;
      });
    for (let i = 0; i < 5; i++) {
      for (const q of [
        params({ embedding: vector() }),
        params({ text: WORDS.slice(i * 8, i * 8 + 8).join(' or '), embedding: vector(), textWeight: 0.3 }),
      ]) {
        const sql = await run(q, false, null);
        const cube = await run(q, true, null);
        expect(sql).toHaveLength(10);
        expect(cube.map((x) => x.node.record.id)).toEqual(sql.map((x) => x.node.record.id));
        cube.forEach((x, n) => {
          expect(x.node.score).toBeCloseTo(sql[n]!.node.score, 12);
          expect(x.node.vectorScore!).toBeCloseTo(sql[n]!.node.vectorScore!, 12);
        });
        const sql2 = await run(q, false, sql.at(-1)!.key);
        const cube2 = await run(q, true, cube.at(-1)!.key);
        expect(cube2.map((x) => x.node.record.id)).toEqual(sql2.map((x) => x.node.record.id));
      }
    }
  });

  it("keeps HNSW results to the caller's tenant and workspace", async () => {
    // The HNSW index is shared by every workspace of its dimension: B's records of the same dimension are in it.
    const q = vector();
    const ws = await workspace(a, wsA);
    const hits = await tenantTx(a, (tx) =>
      searchRecords(tx, ws, params({ embedding: q }), 100, null, new Date(), { efSearch: 1000 }),
    );
    expect(hits).toHaveLength(100);
    const ids = hits.map((x) => x.node.record.id);
    const owners = await h.owner.query<{ tenant_id: string; workspace_id: string }>(
      'SELECT DISTINCT tenant_id, workspace_id FROM memory.records WHERE id = ANY($1::uuid[])',
      [ids],
    );
    expect(owners.rows).toEqual([{ tenant_id: a.tenantId, workspace_id: wsA }]);
  });
});
