/**
 * Memory benchmark: putMemory throughput over HTTP, then search latency (text, vector, hybrid) with
 * `--records` records (default 100 000) in one tenant's workspace. The bulk of the records is seeded with SQL (same
 * columns and chunks the indexing job writes), since seeding through the API would measure the seeding.
 *
 *   npx tsx bench/src/memory-bench.ts                         # PGlite in memory
 *   bash scripts/pg-cluster.sh run -- npx tsx bench/src/memory-bench.ts   # PostgreSQL 15 (DATABASE_URL)
 *
 * Options: --records 100000 --puts 2000 --bulk 10000 --concurrency 8 --queries 50 --dim 64 --out bench/results
 * --latency-mb 1024 (--bulk: records loaded with putMemories, 100 per call, `--concurrency` calls at a time; they
 * count in --records; --latency-mb: the buffer of the memory-latency probe run after the searches, 0 for none).
 * Writes bench/results/<time>-memory-<driver>.json and prints a table. Which search path ran is in the result
 * (`capabilities`, Workspace.searchCapabilities): HNSW_INDEX where pgvector exists (PGlite), else EXACT_IN_MEMORY
 * (EXACT_SCAN with MEMORY_VECTOR_CACHE_MB=0); the first search of each kind is timed apart (`firstMs`: on
 * EXACT_IN_MEMORY it loads the workspace's in-process copy); per kind, the CPU of this process and, on a private
 * cluster (PG_CLUSTER_DIR), of PostgreSQL's server processes per query; the tables' sizes (`databaseMB`), the
 * machine's load (os.loadavg) before and after the searches, its memory latency (`machine.memoryLatencyNs`), the
 * commit and the date are in it too.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { newPrincipal } from '../../test/src/subgraph-harness.js';
import { runIndexingJobs } from '../../subgraphs/memory/src/index.js';
import { startMemoryHarness } from '../../subgraphs/memory/test/harness.js';
import { mulberry32 } from '../../test/fault-proxy/src/prng.js';
import { memoryLatencyNs } from './lib/memory-latency.js';
import { postgresCpuMs } from './lib/probes.js';

const { values: args } = parseArgs({
  options: {
    records: { type: 'string', default: '100000' },
    puts: { type: 'string', default: '2000' },
    bulk: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '8' },
    queries: { type: 'string', default: '50' },
    dim: { type: 'string', default: '64' },
    out: { type: 'string', default: new URL('../results', import.meta.url).pathname },
    'latency-mb': { type: 'string', default: '1024' },
  },
});
const RECORDS = Number(args.records);
const PUTS = Number(args.puts);
const BULK = Number(args.bulk);
const CONCURRENCY = Number(args.concurrency);
const QUERIES = Number(args.queries);
const DIM = Number(args.dim);
const LATENCY_MB = Number(args['latency-mb']);
/** The private cluster (scripts/pg-cluster.sh run), whose server processes' CPU is read per search kind. */
const CLUSTER_DIR = process.env['DATABASE_URL'] ? (process.env['PG_CLUSTER_DIR'] ?? null) : null;

/** Seeded (mulberry32): the same data on every run. */
const random = mulberry32(6);
/** A vocabulary of 2000 made-up words (so a text query matches a realistic few percent of the records). */
const SYLLABLES = ['ka', 'lo', 'mi', 'nu', 're', 'sa', 'ti', 'vo', 'ze', 'da', 'fi', 'go', 'hu', 'je', 'pa'];
const WORDS = Array.from({ length: 2000 }, (_, i) => {
  let w = '';
  for (let n = i + 15; n > 0; n = Math.floor(n / 15)) w += SYLLABLES[n % 15];
  return w;
});
const sentence = (n: number) =>
  Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
const vector = () => Array.from({ length: DIM }, () => random() * 2 - 1);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const h = await startMemoryHarness();
  // Reads only: once more when the keep-alive socket the client reused was closed by the server meanwhile
  // (ECONNRESET after the long seeding, when the connection sat idle past the server's keep-alive timeout).
  const read: typeof h.gql = async (...a) => {
    try {
      return await h.gql(...a);
    } catch (err) {
      if ((err as { cause?: { code?: string } }).cause?.code !== 'ECONNRESET') throw err;
      return h.gql(...a);
    }
  };
  const p = newPrincipal();
  const put = `mutation ($id: ID!, $input: PutMemoryInput!, $key: ID!) {
    putMemory(id: $id, input: $input, idempotencyKey: $key) { record { version } } }`;
  const ws = (
    await h.gql(
      p,
      `mutation ($k: ID!, $d: Int) { createWorkspace(input: { name: "bench", embeddingDimensions: $d }, idempotencyKey: $k) { workspace { id } } }`,
      { k: randomUUID(), d: DIM },
    )
  ).body.data!['createWorkspace'] as { workspace: { id: string } };
  const workspaceId = ws.workspace.id;

  // 1. PUT throughput over HTTP (filter, version check, job enqueue, idempotency key: the whole write path).
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < PUTS) {
        next++;
        const r = await h.gql(p, put, {
          id: randomUUID(),
          input: { workspaceId, kind: 'note', content: sentence(40), tags: ['bench'], embedding: vector() },
          key: randomUUID(),
        });
        if (r.body.errors) throw new Error(JSON.stringify(r.body.errors));
      }
    }),
  );
  const putSeconds = (performance.now() - started) / 1000;
  const indexStart = performance.now();
  for (;;) {
    const pass = await runIndexingJobs(h.db, { now: () => new Date(), batch: 500 });
    if (pass.succeeded + pass.failed + pass.dead + pass.skipped === 0) break;
  }
  const indexSeconds = (performance.now() - indexStart) / 1000;

  // 1b. Bulk load over HTTP with putMemories (100 records per call): records/s, and this process's CPU per record
  // (client and server; on PGlite the database too, on PostgreSQL not the server's backends).
  const putMany = `mutation ($input: PutMemoriesInput!, $key: ID!) {
    putMemories(input: $input, idempotencyKey: $key) { written failed } }`;
  let loaded = 0;
  const bulkCpu = process.cpuUsage();
  const bulkStart = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (loaded < BULK) {
        const n = Math.min(100, BULK - loaded);
        loaded += n;
        const records = Array.from({ length: n }, () => ({
          id: randomUUID(),
          workspaceId,
          kind: 'note',
          content: sentence(40),
          tags: ['bench'],
          embedding: vector(),
        }));
        const r = await h.gql(p, putMany, { input: { records }, key: randomUUID() });
        const out = r.body.data?.['putMemories'] as { written: number } | undefined;
        if (r.body.errors || out?.written !== n) throw new Error(JSON.stringify(r.body));
      }
    }),
  );
  const bulkSeconds = (performance.now() - bulkStart) / 1000;
  const bulkCpuUs = process.cpuUsage(bulkCpu);
  // Their chunks, so search sees them like the others (not timed).
  for (;;) {
    const pass = await runIndexingJobs(h.db, { now: () => new Date(), batch: 500 });
    if (pass.succeeded + pass.failed + pass.dead + pass.skipped === 0) break;
  }

  // 2. Seed the rest with SQL, in the tenant's transaction (RLS applies), chunks included.
  const seedStart = performance.now();
  const batch = 2000;
  for (let done = PUTS + BULK; done < RECORDS; done += batch) {
    const n = Math.min(batch, RECORDS - done);
    const contents = Array.from({ length: n }, () => sentence(40));
    const embeddings = Array.from({ length: n }, () => `{${vector().join(',')}}`);
    await h.db.transaction(
      async (tx) => {
        await tx.query(
          `WITH input AS (
             SELECT gen_random_uuid() AS id, c AS content, e::real[] AS embedding
               FROM unnest($3::text[], $4::text[]) AS t(c, e)
           ), ins AS (
             INSERT INTO memory.records (tenant_id, id, workspace_id, kind, content, tags, version, author,
                                         embedding, embedding_norm)
             SELECT $1, i.id, $2, 'note', i.content, ARRAY['bench'], 1, 'bench', i.embedding,
                    (SELECT sqrt(sum(x::float8 * x::float8)) FROM unnest(i.embedding) x)
               FROM input i
             RETURNING id, content
           )
           INSERT INTO memory.chunks (tenant_id, record_id, n, record_version, content)
           SELECT $1, ins.id, 0, 1, ins.content FROM ins`,
          [p.tenantId, workspaceId, contents, embeddings],
        );
      },
      { 'app.tenant_id': p.tenantId, 'app.principal_id': 'bench' },
    );
  }
  const seedSeconds = (performance.now() - seedStart) / 1000;
  // Planner statistics, the visibility map, and the full-text index's pending list merged, as autovacuum leaves them
  // on a live server after a bulk load (its insert threshold is 1,000 rows plus a fifth of the table); searched before
  // that, every matching chunk's visibility is checked tuple by tuple, and autovacuum may start in the middle of the
  // timed queries. All three need the owner. PGlite has no autovacuum, and its one session runs an owner statement
  // inside a transaction, where VACUUM cannot run: statistics only there.
  const vacuum = h.driver === 'postgres' ? 'VACUUM (ANALYZE)' : 'ANALYZE';
  await h.owner.query(`${vacuum} memory.records`);
  await h.owner.query(`${vacuum} memory.chunks`);
  await h.owner.query(`SELECT gin_clean_pending_list('memory.chunks_tsv'::regclass)`);
  // What the searches read, for sizing the server (shared_buffers, bench/README.md "Memory"): each table's heap and
  // its indexes, in MB.
  const sizes = await h.owner.query<{ name: string; heap: string; indexes: string }>(
    `SELECT c.relname AS name, pg_relation_size(c.oid)::text AS heap, pg_indexes_size(c.oid)::text AS indexes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'memory' AND c.relname IN ('records', 'chunks')`,
  );
  const databaseMB = Object.fromEntries(
    sizes.rows.map((r) => [r.name, { heap: Number(r.heap) / 2 ** 20, indexes: Number(r.indexes) / 2 ** 20 }]),
  );
  const caps = await read(
    p,
    `query ($id: ID!) { workspace(id: $id) { searchCapabilities { vectorSearch vectorExact fullText } } }`,
    { id: workspaceId },
  );
  if (caps.body.errors) throw new Error(JSON.stringify(caps.body.errors));
  const capabilities = (caps.body.data!['workspace'] as { searchCapabilities: Record<string, unknown> })
    .searchCapabilities;
  const loadBefore = loadavg();

  // 3. Search latency over HTTP.
  const search = `query ($ws: ID!, $q: MemorySearchInput!) {
    searchMemory(workspaceId: $ws, query: $q, first: 10) { edges { score node { id } } } }`;
  const kinds: Record<string, () => Record<string, unknown>> = {
    text: () => ({
      text: `${WORDS[Math.floor(random() * WORDS.length)]} ${WORDS[Math.floor(random() * WORDS.length)]}`,
    }),
    vector: () => ({ embedding: vector() }),
    hybrid: () => ({ text: WORDS[Math.floor(random() * WORDS.length)], embedding: vector() }),
  };
  const searchResults: Record<
    string,
    {
      p50: number;
      p99: number;
      mean: number;
      n: number;
      firstMs: number;
      processCpuMsPerQuery: number;
      /** The private cluster's server processes (scripts/pg-cluster.sh run sets PG_CLUSTER_DIR); null elsewhere. */
      postgresCpuMsPerQuery: number | null;
      /** This process after the kind's queries (no GC forced): what the searches run beside. */
      processMemoryMB: { heapUsed: number; arrayBuffers: number; rss: number };
    }
  > = {};
  const firstSearchMemoryMB: Record<string, { heap: number; arrayBuffers: number }> = {};
  for (const [kind, make] of Object.entries(kinds)) {
    // The first search of a kind is timed apart: on EXACT_IN_MEMORY the first vector search of the workspace loads
    // the in-process copy (once per process), which is not the latency of a search.
    global.gc?.();
    const mem0 = process.memoryUsage();
    const t0 = performance.now();
    const first = await read(p, search, { ws: workspaceId, q: make() });
    const firstMs = performance.now() - t0;
    global.gc?.();
    const mem1 = process.memoryUsage();
    // What the first search left in memory (with --expose-gc: live objects only): the in-process copy, if any.
    firstSearchMemoryMB[kind] = {
      heap: (mem1.heapUsed - mem0.heapUsed) / 2 ** 20,
      arrayBuffers: (mem1.arrayBuffers - mem0.arrayBuffers) / 2 ** 20,
    };
    if (first.body.errors) throw new Error(JSON.stringify(first.body.errors));
    const times: number[] = [];
    const cpu = process.cpuUsage();
    const pgCpu0 = postgresCpuMs(CLUSTER_DIR);
    for (let i = 0; i < QUERIES; i++) {
      const t0 = performance.now();
      const r = await read(p, search, { ws: workspaceId, q: make() });
      times.push(performance.now() - t0);
      if (r.body.errors) throw new Error(JSON.stringify(r.body.errors));
    }
    const used = process.cpuUsage(cpu);
    const pgCpu1 = postgresCpuMs(CLUSTER_DIR);
    times.sort((a, b) => a - b);
    searchResults[kind] = {
      // This process: the memory service and the bench's client (on PostgreSQL, not the server's backends).
      processCpuMsPerQuery: (used.user + used.system) / 1000 / QUERIES,
      postgresCpuMsPerQuery: pgCpu0 !== null && pgCpu1 !== null ? (pgCpu1 - pgCpu0) / QUERIES : null,
      processMemoryMB: (({ heapUsed, arrayBuffers, rss }) => ({
        heapUsed: heapUsed / 2 ** 20,
        arrayBuffers: arrayBuffers / 2 ** 20,
        rss: rss / 2 ** 20,
      }))(process.memoryUsage()),
      p50: percentile(times, 50),
      p99: percentile(times, 99),
      mean: times.reduce((a, b) => a + b, 0) / times.length,
      n: times.length,
      firstMs,
    };
  }

  const loadAfter = loadavg();
  // After the searches, so its buffer is not in their memory figures: ns per dependent load through --latency-mb MB.
  const memoryLatency = LATENCY_MB > 0 ? memoryLatencyNs(LATENCY_MB) : null;
  const result = {
    bench: 'memory',
    driver: h.driver,
    date: new Date().toISOString(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model ?? '',
      loadavg: { before: loadBefore, after: loadAfter },
      /** bench/src/lib/memory-latency.ts over --latency-mb MB (null with 0), measured after the searches. */
      memoryLatencyMB: LATENCY_MB,
      memoryLatencyNs: memoryLatency,
    },
    records: RECORDS,
    dim: DIM,
    capabilities,
    put: { count: PUTS, concurrency: CONCURRENCY, seconds: putSeconds, perSecond: PUTS / putSeconds },
    indexing: { jobs: PUTS, seconds: indexSeconds, perSecond: PUTS / indexSeconds },
    // null when --bulk 0 skipped the phase (a rate over no records is no number).
    putMemories:
      BULK > 0
        ? {
            count: BULK,
            perCall: 100,
            concurrency: CONCURRENCY,
            seconds: bulkSeconds,
            perSecond: BULK / bulkSeconds,
            processCpuMsPerRecord: (bulkCpuUs.user + bulkCpuUs.system) / 1000 / BULK,
          }
        : null,
    seedSeconds,
    databaseMB,
    searchMs: searchResults,
    firstSearchMemoryMB,
  };
  await h.close();
  console.error(`memory bench on ${result.driver}, ${RECORDS} records (dim ${DIM}) in one tenant`);
  console.error(
    `search paths: ${JSON.stringify(capabilities)}; load average ${loadBefore.map((x) => x.toFixed(2)).join(' ')} → ${loadAfter.map((x) => x.toFixed(2)).join(' ')} (${result.machine.cpus} CPUs)`,
  );
  if (result.machine.memoryLatencyNs !== null)
    console.error(
      `memory latency: ${result.machine.memoryLatencyNs.toFixed(0)} ns per dependent load through ${LATENCY_MB} MB`,
    );
  console.error(
    `putMemory over HTTP: ${result.put.perSecond.toFixed(0)}/s (${PUTS} puts, ${CONCURRENCY} concurrent)`,
  );
  const bulk = result.putMemories;
  console.error(
    bulk
      ? `putMemories over HTTP: ${bulk.perSecond.toFixed(0)} records/s (${BULK} records, 100 per call, ${CONCURRENCY} concurrent; ${bulk.processCpuMsPerRecord.toFixed(2)} ms CPU per record in this process)`
      : 'putMemories over HTTP: not run (--bulk 0)',
  );
  console.error(`indexing jobs: ${result.indexing.perSecond.toFixed(0)}/s`);
  console.error(
    `tables: ${Object.entries(databaseMB)
      .map(([name, mb]) => `${name} ${mb.heap.toFixed(0)} MB + indexes ${mb.indexes.toFixed(0)} MB`)
      .join(', ')}`,
  );
  for (const [k, v] of Object.entries(searchResults)) {
    console.error(
      `search ${k.padEnd(6)} p50 ${v.p50.toFixed(1)} ms  p99 ${v.p99.toFixed(1)} ms  (${v.n} queries; the first one before them ${v.firstMs.toFixed(0)} ms; ${v.processCpuMsPerQuery.toFixed(1)} ms CPU per query in this process${v.postgresCpuMsPerQuery === null ? '' : `, ${v.postgresCpuMsPerQuery.toFixed(1)} ms in PostgreSQL`}; heap ${v.processMemoryMB.heapUsed.toFixed(0)} MB, array buffers ${v.processMemoryMB.arrayBuffers.toFixed(0)} MB)`,
    );
  }
  const dir = args.out;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-memory-${result.driver}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.error(`wrote ${file}`);
  // The JSON on stdout (npm run bench -- --memory keeps it); the lines above go to stderr.
  console.log(JSON.stringify(result, null, 2));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
