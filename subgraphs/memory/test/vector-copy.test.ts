/**
 * EXACT_IN_MEMORY (issue 18): the memory subgraph's in-process copies of workspaces' embeddings (src/vector-index/)
 * and migration 007's change feed, as the memory service's own role (RLS forced), on both drivers:
 * - the copy's hits and scores equal the SQL exact scan's to the bit (vector, hybrid, every filter, page 2), so a
 *   cursor from one path pages the other;
 * - a search sees every write committed before it began: create, replace, embedding removed, delete, expiry, an id
 *   deleted and written again, writes by hand-written SQL, a delete by the sweeper; and (PostgreSQL, two
 *   connections) a write still uncommitted during one round is read by the next, once committed;
 * - the feed pages (tiny pages, churn) to the same copy;
 * - tenants never meet: another tenant's round reads nothing of the workspace, whatever id it asks for;
 * - the budget: a workspace that alone does not fit is searched in SQL (same hits); others are evicted LRU; idle
 *   and stale copies go;
 * - tombstones: one per deleted record with an embedding, none for a deleted workspace, never written or deleted
 *   by the service role itself, purged by the sweeper after a day.
 */
import type { Queryable } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../test/fault-proxy/src/prng.js';
import { newPrincipal, type Principal } from '../../../test/src/subgraph-harness.js';
import type { WorkspaceModel } from '../src/models.js';
import { searchRecords, type SearchParams } from '../src/search.js';
import { findWorkspace } from '../src/store.js';
import { runIndexingJobs } from '../src/indexing/worker.js';
import { sweepExpiredMemory } from '../src/sweeper.js';
import { VectorCache } from '../src/vector-index/cache.js';
import { toReal } from '../src/vector-index/flat-index.js';
import { key, searchParams as params, startMemoryHarness, type MemoryHarness } from './harness.js';

let h: MemoryHarness;
const a = newPrincipal();
const b = newPrincipal();
const DIM = 8;
const random = mulberry32(1807);
const WORDS = Array.from({ length: 300 }, (_, i) => `v${i.toString(36)}q`);
const KINDS = ['note', 'fact', 'incident'];
const TAGS = ['red', 'green', 'blue'];
const vector = () => Array.from({ length: DIM }, () => random() * 2 - 1);
const sentence = (n: number) =>
  Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');

/** Ten words, the first of them three times. */
const repeating = () => {
  const word = sentence(1);
  return `${word} ${word} ${word} ${sentence(7)}`;
};

const tenantTx = <T>(p: Principal, fn: (tx: Queryable) => Promise<T>) =>
  h.db.transaction(fn, { 'app.tenant_id': p.tenantId, 'app.principal_id': p.userId });

async function createWorkspace(p: Principal): Promise<string> {
  const r = await h.gql(
    p,
    `mutation ($k: ID!, $d: Int) { createWorkspace(input: { name: "copy", embeddingDimensions: $d }, idempotencyKey: $k) { workspace { id } } }`,
    { k: key(), d: DIM },
  );
  expect(r.body.errors).toBeUndefined();
  return (r.body.data!['createWorkspace'] as { workspace: { id: string } }).workspace.id;
}

const workspace = (p: Principal, id: string): Promise<WorkspaceModel> =>
  tenantTx(p, async (tx) => (await findWorkspace(tx, id))!);

/**
 * Seeds n records with SQL in the tenant's transaction (kinds, tags, authors varied; chunks for full text: every
 * third record has a second chunk, so a record may match by either or both and its text score is the better one).
 * The second chunk repeats a word three times, so it often outranks the first.
 */
async function seed(p: Principal, ws: string, n: number): Promise<void> {
  const rows = Array.from({ length: n }, (_, i) => ({
    content: sentence(10),
    // A word three times: where it is asked for, the second chunk outranks the first.
    second: i % 3 === 1 ? repeating() : null,
    embedding: `{${vector().join(',')}}`,
    kind: KINDS[i % 3]!,
    tags: `{${TAGS.filter(() => random() < 0.4).join(',')}}`,
    author: i % 4 === 0 ? 'device:x' : p.userId,
  }));
  await tenantTx(p, (tx) =>
    tx.query(
      `WITH input AS (
         SELECT gen_random_uuid() AS id, c AS content, e::real[] AS embedding, k AS kind, t::text[] AS tags, au AS author,
                s AS second
           FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS x(c, e, k, t, au, s)
       ), ins AS (
         INSERT INTO memory.records (tenant_id, id, workspace_id, kind, content, tags, version, author, embedding,
                                     embedding_norm)
         SELECT $1, i.id, $2, i.kind, i.content, i.tags, 1, i.author, i.embedding,
                (SELECT sqrt(sum(x::float8 * x::float8)) FROM unnest(i.embedding) x)
           FROM input i
         RETURNING id, content
       )
       INSERT INTO memory.chunks (tenant_id, record_id, n, record_version, content)
       SELECT $1, ins.id, 0, 1, ins.content FROM ins
       UNION ALL
       SELECT $1, i.id, 1, 1, i.second FROM input i JOIN ins ON ins.id = i.id WHERE i.second IS NOT NULL`,
      [
        p.tenantId,
        ws,
        rows.map((r) => r.content),
        rows.map((r) => r.embedding),
        rows.map((r) => r.kind),
        rows.map((r) => r.tags),
        rows.map((r) => r.author),
        rows.map((r) => r.second),
      ],
    ),
  );
}

type Path = 'EXACT_IN_MEMORY' | 'EXACT_SCAN';
function search(
  p: Principal,
  ws: WorkspaceModel,
  q: SearchParams,
  path: Path,
  cache: VectorCache,
  opts: {
    limit?: number;
    after?: { value: string; id: string } | null;
    now?: Date;
    matchesPerPart?: number;
    textInProcess?: boolean;
  } = {},
) {
  return tenantTx(p, (tx) =>
    searchRecords(tx, ws, q, opts.limit ?? 10, opts.after ?? null, opts.now ?? new Date(), {
      vectorPath: path,
      exactCube: false,
      vectors: { cache, tenantId: p.tenantId },
      matchesPerPart: opts.matchesPerPart,
      textInProcess: opts.textInProcess,
    }),
  );
}

const ids = (hits: { node: { record: { id: string } } }[]) => hits.map((x) => x.node.record.id);

async function put(p: Principal, ws: string, id: string, input: Record<string, unknown>): Promise<void> {
  const r = await h.gql(
    p,
    `mutation ($id: ID!, $input: PutMemoryInput!, $key: ID!) { putMemory(id: $id, input: $input, idempotencyKey: $key) { record { id } } }`,
    {
      id,
      input: { workspaceId: ws, kind: 'note', content: 'written through the API', ...input },
      key: key(),
    },
  );
  expect(r.body.errors).toBeUndefined();
}

async function del(p: Principal, id: string): Promise<void> {
  const r = await h.gql(
    p,
    `mutation ($id: ID!, $key: ID!) { deleteMemory(id: $id, idempotencyKey: $key) { deletedId } }`,
    { id, key: key() },
  );
  expect(r.body.errors).toBeUndefined();
}

let wsA: string;
beforeAll(async () => {
  h = await startMemoryHarness({ vectorCacheBytes: 0 });
  wsA = await createWorkspace(a);
  await seed(a, wsA, 600);
}, 300_000);

afterAll(async () => {
  await h?.close();
});

describe('EXACT_IN_MEMORY', () => {
  it("gives the SQL exact scan's hits and scores to the bit: vector, hybrid, every filter, page 2", async () => {
    const ws = await workspace(a, wsA);
    const cache = new VectorCache({ maxBytes: 64 << 20 });
    const since = new Date(Date.now() - 60_000);
    const queries = [
      params({ embedding: vector() }),
      params({
        embedding: vector(),
        filter: { kind: 'fact', tag: null, authorId: null, updatedSince: null },
      }),
      params({
        embedding: vector(),
        filter: { kind: null, tag: 'red', authorId: a.userId, updatedSince: since },
      }),
      params({
        embedding: vector(),
        filter: { kind: null, tag: null, authorId: 'device:x', updatedSince: null },
      }),
      params({ text: WORDS.slice(0, 12).join(' or '), embedding: vector(), textWeight: 0.3 }),
      params({
        text: WORDS.slice(12, 30).join(' or '),
        embedding: vector(),
        filter: { kind: 'note', tag: 'blue', authorId: null, updatedSince: null },
      }),
    ];
    for (const q of queries) {
      const sql = await search(a, ws, q, 'EXACT_SCAN', cache);
      const mem = await search(a, ws, q, 'EXACT_IN_MEMORY', cache);
      expect(sql.length).toBeGreaterThan(0);
      expect(ids(mem)).toEqual(ids(sql));
      for (const [n, x] of mem.entries()) {
        expect(x.node.score).toBe(sql[n]!.node.score);
        expect(x.node.vectorScore).toBe(sql[n]!.node.vectorScore);
        expect(x.node.textScore).toBe(sql[n]!.node.textScore);
        expect(x.key).toEqual(sql[n]!.key);
        expect(x.node.record).toEqual(sql[n]!.node.record);
      }
      // Hybrid: the copy's own postings (up to 16 words) and PostgreSQL's matches give the same page, read in parts
      // of 7 too (a record's chunks in different parts).
      if (q.text) {
        for (const matchesPerPart of [undefined, 7]) {
          expect(
            await search(a, ws, q, 'EXACT_IN_MEMORY', cache, { matchesPerPart, textInProcess: false }),
          ).toEqual(mem);
        }
      }
      // Page 2 from either path's cursor, on the other path: the same records.
      const memAfterSql = await search(a, ws, q, 'EXACT_IN_MEMORY', cache, { after: sql.at(-1)!.key });
      const sqlAfterMem = await search(a, ws, q, 'EXACT_SCAN', cache, { after: mem.at(-1)!.key });
      expect(ids(memAfterSql)).toEqual(ids(sqlAfterMem));
    }
    // Hybrid with a text nobody wrote: no candidates on either path.
    const none = params({ text: 'zzqxnomatchword', embedding: vector() });
    expect(await search(a, ws, none, 'EXACT_IN_MEMORY', cache)).toEqual([]);
    expect(await search(a, ws, none, 'EXACT_SCAN', cache)).toEqual([]);
    expect(cache.stats()).toMatchObject({ workspaces: 1, records: 600, loads: 1 });
    cache.close();
  });

  it('follows chunks written after their record: the indexing job, content replaced, a chunk added by hand', async () => {
    const ws = await workspace(a, wsA);
    const cache = new VectorCache({ maxBytes: 64 << 20 });
    const probe = vector();
    const hybrid = (text: string) => params({ text, embedding: probe, textWeight: 0.5 });
    /** The in-process hits (text matched by the copy's postings), checked against the SQL scan's. */
    const both = async (text: string) => {
      const mem = await search(a, ws, hybrid(text), 'EXACT_IN_MEMORY', cache);
      const sql = await search(a, ws, hybrid(text), 'EXACT_SCAN', cache);
      expect(mem).toEqual(sql);
      return mem.map((x) => [x.node.record.id, x.node.textScore]);
    };
    const index = () => runIndexingJobs(h.db, { now: () => new Date(), batch: 50 });
    expect(await both('lemming')).toEqual([]);
    expect(cache.stats().loads).toBe(1);

    const id = crypto.randomUUID();
    await put(a, wsA, id, { content: 'a quixotic lemming, lemming', embedding: probe });
    // No chunk yet: the record is in the copy, but matches no text.
    expect(await both('lemming')).toEqual([]);
    expect((await index()).succeeded).toBe(1);
    const [found] = await both('lemming');
    expect(found).toEqual([id, expect.any(Number)]);
    expect(cache.lastRound).toMatchObject({ records: 0, texts: 1 });
    // Content replaced: the write clears the chunks at once, the job cuts the new ones.
    await put(a, wsA, id, { content: 'a walrus', embedding: probe });
    expect(await both('lemming')).toEqual([]);
    await index();
    expect(await both('lemming')).toEqual([]);
    expect((await both('walrus')).map(([x]) => x)).toEqual([id]);
    // A second chunk written by hand (hand-written SQL stamps it too): the record matches by either.
    await tenantTx(a, (tx) =>
      tx.query(
        `INSERT INTO memory.chunks (tenant_id, record_id, n, record_version, content)
         VALUES ($1, $2, 1, 2, 'walrus walrus lemming')`,
        [a.tenantId, id],
      ),
    );
    expect((await both('lemming')).map(([x]) => x)).toEqual([id]);
    const [[, twice]] = (await both('walrus')) as [[string, number]];
    expect(twice).toBeGreaterThan(0.1); // the second chunk's two walruses outrank the first's one
    // Deleted: gone from the copy, chunks and all.
    await del(a, id);
    expect(await both('walrus')).toEqual([]);
    cache.close();
  });

  it("rounds query numbers to 32 bits as PostgreSQL's real does, halfway cases included", async () => {
    // 32-bit random numbers often sit exactly halfway between two 32-bit floats, where Math.fround (round the
    // double) and real (round the decimal text) can differ.
    const values = Array.from({ length: 4000 }, () => random() * 2 - 1);
    values.push(0.019673467613756657, -0.019673467613756657, 0.1, 1e-40, 3.4e38, 123456789.123);
    const r = await h.db.query<{ v: number[] }>('SELECT $1::real[]::float8[] AS v', [values]);
    const pgValues = r.rows[0]!.v.map(Number);
    expect(values.map(toReal)).toEqual(pgValues);
    expect(values.some((x, i) => Math.fround(x) !== pgValues[i])).toBe(true); // the case is real
  });

  it('sees every write committed before the search: create, replace, embedding removed, delete, expiry, re-create', async () => {
    const ws = await workspace(a, wsA);
    const cache = new VectorCache({ maxBytes: 64 << 20 });
    const top = async (q: number[], now?: Date) =>
      ids(await search(a, ws, params({ embedding: q }), 'EXACT_IN_MEMORY', cache, { limit: 3, now }));
    // A direction no seeded record is near: each write below is checked by where it ranks.
    const probe = Array.from({ length: DIM }, (_, i) => (i === 0 ? 1000 : 0));
    const first = await top(probe);
    expect(cache.stats().loads).toBe(1);

    const id = crypto.randomUUID();
    await put(a, wsA, id, { embedding: probe });
    expect((await top(probe))[0]).toBe(id);
    // Replaced: far away now.
    await put(a, wsA, id, { embedding: probe.map((x) => -x) });
    expect(await top(probe)).not.toContain(id);
    await put(a, wsA, id, { embedding: probe });
    expect((await top(probe))[0]).toBe(id);
    // The embedding removed: no longer a vector candidate.
    await put(a, wsA, id, { embedding: null });
    expect(await top(probe)).toEqual(first);
    // Deleted, then written again under the same id.
    await put(a, wsA, id, { embedding: probe });
    await del(a, id);
    expect(await top(probe)).toEqual(first);
    await put(a, wsA, id, { embedding: probe });
    expect((await top(probe))[0]).toBe(id);
    // Expiry: hidden from a search at a time past it, purged by the sweeper (across tenants, a tombstone).
    const expiresAt = new Date(Date.now() + 60_000);
    await put(a, wsA, id, { embedding: probe, expiresAt: expiresAt.toISOString() });
    expect((await top(probe))[0]).toBe(id);
    const later = new Date(expiresAt.getTime() + 1);
    expect(await top(probe, later)).toEqual(first);
    expect(await sweepExpiredMemory(h.db, later)).toBeGreaterThanOrEqual(1);
    expect(await top(probe)).toEqual(first);
    // Hand-written SQL in the tenant's transaction: the trigger stamps it all the same.
    const byHand = crypto.randomUUID();
    await tenantTx(a, (tx) =>
      tx.query(
        `INSERT INTO memory.records (tenant_id, id, workspace_id, kind, content, version, author, embedding, embedding_norm)
         VALUES ($1, $2, $3, 'note', 'by hand', 1, 'x', $4::real[], 1000)`,
        [a.tenantId, byHand, wsA, probe],
      ),
    );
    expect((await top(probe))[0]).toBe(byHand);
    await tenantTx(a, (tx) => tx.query('DELETE FROM memory.records WHERE id = $1', [byHand]));
    expect(await top(probe)).toEqual(first);
    // One load; every other search was an incremental round.
    expect(cache.stats()).toMatchObject({ loads: 1, workspaces: 1 });
    cache.close();
  });

  it('reads in the next round a write that was uncommitted during one (PostgreSQL: two connections)', async () => {
    if (h.driver !== 'postgres') return; // PGlite has one connection: no write can be open beside a search.
    const ws = await workspace(a, wsA);
    const cache = new VectorCache({ maxBytes: 64 << 20 });
    const probe = Array.from({ length: DIM }, (_, i) => (i === 1 ? 1000 : 0));
    const top = async () =>
      ids(await search(a, ws, params({ embedding: probe }), 'EXACT_IN_MEMORY', cache))[0];
    const before = await top();
    const id = crypto.randomUUID();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const written = new Promise<void>((resolve) => (inserted = resolve));
    // A writer whose transaction got its id before the round below and commits after it.
    const writer = tenantTx(a, async (tx) => {
      await tx.query(
        `INSERT INTO memory.records (tenant_id, id, workspace_id, kind, content, version, author, embedding, embedding_norm)
         VALUES ($1, $2, $3, 'note', 'late', 1, 'x', $4::real[], 1000)`,
        [a.tenantId, id, wsA, probe],
      );
      inserted();
      await gate;
    });
    await written;
    expect(await top()).toBe(before); // not committed: not visible
    const watermark = cache.lastRound!.watermark;
    release();
    await writer;
    expect(await top()).toBe(id);
    // The round during the open write kept the watermark at or below the writer's id, so this one read it.
    const xid = await h.owner.query<{ x: string }>(
      'SELECT search_xid::text AS x FROM memory.records WHERE id = $1',
      [id],
    );
    expect(BigInt(watermark)).toBeLessThanOrEqual(BigInt(xid.rows[0]!.x));
    cache.close();
  });

  it('pages the feed (tiny pages, churn between rounds, chunks re-cut) to the same copy', async () => {
    const p = newPrincipal();
    const wsId = await createWorkspace(p);
    await seed(p, wsId, 57);
    const ws = await workspace(p, wsId);
    const paged = new VectorCache({ maxBytes: 64 << 20, pageSize: 4 });
    const q = params({ embedding: vector() });
    const hybrid = params({ text: WORDS.slice(0, 12).join(' or '), embedding: vector(), textWeight: 0.4 });
    const compare = async () => {
      const sql = await search(p, ws, q, 'EXACT_SCAN', paged, { limit: 200 });
      const mem = await search(p, ws, q, 'EXACT_IN_MEMORY', paged, { limit: 200 });
      expect(ids(mem)).toEqual(ids(sql));
      expect(paged.stats().records).toBe(sql.length);
      const round = paged.lastRound;
      const sqlText = await search(p, ws, hybrid, 'EXACT_SCAN', paged, { limit: 200 });
      const memText = await search(p, ws, hybrid, 'EXACT_IN_MEMORY', paged, { limit: 200 });
      expect(memText.map((x) => [x.node.record.id, x.node.textScore])).toEqual(
        sqlText.map((x) => [x.node.record.id, x.node.textScore]),
      );
      expect(memText.length).toBeGreaterThan(0);
      return round!;
    };
    expect((await compare()).statements).toBeGreaterThan(10); // 57 records in pages of 4
    for (let round = 0; round < 3; round++) {
      await seed(p, wsId, 9);
      const victims = await tenantTx(p, (tx) =>
        tx.query<{ id: string }>(
          'SELECT id FROM memory.records WHERE workspace_id = $1 ORDER BY id LIMIT 6',
          [wsId],
        ),
      );
      await tenantTx(p, (tx) =>
        tx.query('DELETE FROM memory.records WHERE id = ANY($1::uuid[])', [victims.rows.map((r) => r.id)]),
      );
      // Nine records' chunks cut again (as the indexing job does: delete and insert in one transaction), new words.
      await tenantTx(p, async (tx) => {
        const recut = await tx.query<{ id: string }>(
          'SELECT id FROM memory.records WHERE workspace_id = $1 ORDER BY id DESC LIMIT 9',
          [wsId],
        );
        const recutIds = recut.rows.map((r) => r.id);
        await tx.query('DELETE FROM memory.chunks WHERE record_id = ANY($1::uuid[])', [recutIds]);
        await tx.query(
          `INSERT INTO memory.chunks (tenant_id, record_id, n, record_version, content)
           SELECT $1, id, 0, 1, $3 FROM unnest($2::uuid[]) AS id`,
          [p.tenantId, recutIds, `${WORDS[round]} ${WORDS[round]} ${sentence(5)}`],
        );
      });
      // The nine re-cut records come by the chunks' feed (with the round's new records, which come by both).
      expect((await compare()).texts).toBeGreaterThanOrEqual(9);
    }
    paged.close();
  });

  it("never reads another tenant's records, whatever workspace id it asks for", async () => {
    const cache = new VectorCache({ maxBytes: 64 << 20 });
    const wsB = await createWorkspace(b);
    await seed(b, wsB, 20);
    // B asks for A's workspace id in B's transaction: RLS leaves nothing to read, and the copy is B's own.
    const fake: WorkspaceModel = { ...(await workspace(b, wsB)), id: wsA };
    const hits = await search(b, fake, params({ embedding: vector() }), 'EXACT_IN_MEMORY', cache);
    expect(hits).toEqual([]);
    const own = await search(
      a,
      await workspace(a, wsA),
      params({ embedding: vector() }),
      'EXACT_IN_MEMORY',
      cache,
    );
    expect(own).toHaveLength(10);
    expect(cache.stats()).toMatchObject({ workspaces: 2, records: (await countEmbedded(a, wsA)) + 0 });
    // B's search of its own workspace holds only B's records.
    const bHits = await search(
      b,
      await workspace(b, wsB),
      params({ embedding: vector() }),
      'EXACT_IN_MEMORY',
      cache,
      {
        limit: 50,
      },
    );
    expect(bHits).toHaveLength(20);
    const aIds = new Set(
      ids(
        await search(a, await workspace(a, wsA), params({ embedding: vector() }), 'EXACT_SCAN', cache, {
          limit: 1000,
        }),
      ),
    );
    expect(ids(bHits).some((x) => aIds.has(x))).toBe(false);
    cache.close();
  });

  it('searches in SQL a workspace too large for the budget, and evicts the least recently used copy for another', async () => {
    const ws = await workspace(a, wsA);
    const q = params({ embedding: vector() });
    const tiny = new VectorCache({ maxBytes: 10_000 });
    const sql = await search(a, ws, q, 'EXACT_SCAN', tiny);
    expect(ids(await search(a, ws, q, 'EXACT_IN_MEMORY', tiny))).toEqual(ids(sql));
    expect(tiny.stats()).toMatchObject({ workspaces: 0, tooLarge: 1 });
    tiny.close();
    // In pages of 4: the load stops part-way, the round fails, and the same transaction goes on to search in SQL.
    const paged = new VectorCache({ maxBytes: 20_000, pageSize: 4 });
    expect(ids(await search(a, ws, q, 'EXACT_IN_MEMORY', paged))).toEqual(ids(sql));
    expect(paged.stats()).toMatchObject({ workspaces: 0, tooLarge: 1 });
    paged.close();

    // Room for A's workspace (600+ records) or two small ones, not for both.
    const small = newPrincipal();
    const s1 = await createWorkspace(small);
    const s2 = await createWorkspace(small);
    await seed(small, s1, 30);
    await seed(small, s2, 30);
    const sized = new VectorCache({ maxBytes: 64 << 20 });
    await search(a, ws, q, 'EXACT_IN_MEMORY', sized);
    const aBytes = sized.stats().bytes;
    sized.close();
    const lru = new VectorCache({ maxBytes: aBytes + 1000 });
    await search(small, await workspace(small, s1), q, 'EXACT_IN_MEMORY', lru);
    await search(small, await workspace(small, s2), q, 'EXACT_IN_MEMORY', lru);
    expect(lru.stats()).toMatchObject({ workspaces: 2, evictions: 0 });
    expect(ids(await search(a, ws, q, 'EXACT_IN_MEMORY', lru))).toEqual(ids(sql));
    expect(lru.stats().evictions).toBeGreaterThanOrEqual(1);
    expect(lru.stats().bytes).toBeLessThanOrEqual(aBytes + 1000);
    lru.close();
  });

  it('drops idle copies and reloads stale ones (fake clock)', async () => {
    let t = 0;
    const cache = new VectorCache({ maxBytes: 64 << 20, idleMs: 1000, maxStaleMs: 5000, clock: () => t });
    const ws = await workspace(a, wsA);
    const q = params({ embedding: vector() });
    await search(a, ws, q, 'EXACT_IN_MEMORY', cache);
    t = 900;
    await search(a, ws, q, 'EXACT_IN_MEMORY', cache);
    expect(cache.stats()).toMatchObject({ workspaces: 1, loads: 1, rounds: 2 });
    t = 2000;
    cache.sweep();
    expect(cache.stats()).toMatchObject({ workspaces: 0, evictions: 1 });
    await search(a, ws, q, 'EXACT_IN_MEMORY', cache);
    expect(cache.stats().loads).toBe(2);
    cache.close();
    // Not idle, but no round for longer than maxStaleMs (tombstones may have been purged since): loaded anew.
    const stale = new VectorCache({ maxBytes: 64 << 20, idleMs: 60_000, maxStaleMs: 5000, clock: () => t });
    t = 0;
    await search(a, ws, q, 'EXACT_IN_MEMORY', stale);
    t = 4000;
    await search(a, ws, q, 'EXACT_IN_MEMORY', stale);
    expect(stale.stats().loads).toBe(1);
    t = 9500;
    await search(a, ws, q, 'EXACT_IN_MEMORY', stale);
    expect(stale.stats().loads).toBe(2);
    stale.close();
  });

  it('writes one tombstone per deleted record with an embedding, none for a deleted workspace; the role cannot write them', async () => {
    const p = newPrincipal();
    const wsId = await createWorkspace(p);
    await seed(p, wsId, 5);
    const tombstones = async () =>
      Number(
        (
          await h.owner.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM memory.search_tombstones WHERE tenant_id = $1',
            [p.tenantId],
          )
        ).rows[0]!.n,
      );
    const one = await tenantTx(p, (tx) => tx.query<{ id: string }>('SELECT id FROM memory.records LIMIT 1'));
    await del(p, one.rows[0]!.id);
    expect(await tombstones()).toBe(1);
    // Not the service role's to write or delete (only the trigger and the sweeper's function).
    await expect(
      tenantTx(p, (tx) =>
        tx.query(
          `INSERT INTO memory.search_tombstones (tenant_id, workspace_id, record_id, deleted_xid) VALUES ($1, $2, $3, '1')`,
          [p.tenantId, wsId, one.rows[0]!.id],
        ),
      ),
    ).rejects.toThrow(/permission denied/);
    await expect(tenantTx(p, (tx) => tx.query('DELETE FROM memory.search_tombstones'))).rejects.toThrow(
      /permission denied/,
    );
    // Another tenant does not see them.
    const seen = await tenantTx(a, (tx) =>
      tx.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM memory.search_tombstones WHERE tenant_id = $1',
        [p.tenantId],
      ),
    );
    expect(seen.rows[0]!.n).toBe(0);
    const r = await h.gql(
      p,
      `mutation ($id: ID!, $key: ID!) { deleteWorkspace(id: $id, idempotencyKey: $key) { recordsDeleted } }`,
      { id: wsId, key: key() },
    );
    expect(r.body.errors).toBeUndefined();
    expect(await tombstones()).toBe(1); // the workspace's 4 other records left none
    // A day later the sweeper drops it.
    await sweepExpiredMemory(h.db, new Date(Date.now() + 23 * 3600_000));
    expect(await tombstones()).toBe(1);
    await sweepExpiredMemory(h.db, new Date(Date.now() + 25 * 3600_000));
    expect(await tombstones()).toBe(0);
  });
});

async function countEmbedded(p: Principal, ws: string): Promise<number> {
  const r = await tenantTx(p, (tx) =>
    tx.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM memory.records WHERE workspace_id = $1 AND embedding IS NOT NULL',
      [ws],
    ),
  );
  return r.rows[0]!.n;
}
