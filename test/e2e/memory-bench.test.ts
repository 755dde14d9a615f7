/**
 * `npm run bench -- --memory` at a small size on the suite's driver (PostgreSQL with DATABASE_URL, else PGlite): every phase runs (puts, putMemories, indexing, the
 * SQL seed and its VACUUM/ANALYZE as owner, the three search kinds) and the result says what ran. The timings are
 * not checked; the bench reports them (bench/README.md, "Memory").
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = new URL('../../bench/src/memory-bench.ts', import.meta.url).pathname;
const out = mkdtempSync(join(tmpdir(), 'agentgraph-memory-bench-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const driver = process.env['DATABASE_URL'] ? 'postgres' : 'pglite';

describe(`the memory bench on ${driver}`, () => {
  it('runs every phase and reports each search kind and the path it took', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '--expose-gc',
        '--conditions=@agentgraph/source',
        '--import',
        'tsx',
        script,
        ...['--records', '300', '--puts', '10', '--bulk', '100', '--queries', '3', '--out', out],
        ...['--latency-mb', '8'],
      ],
      { timeout: 120_000, maxBuffer: 16 * 2 ** 20 },
    );
    const result = JSON.parse(stdout) as {
      driver: string;
      records: number;
      capabilities: { vectorSearch: string; fullText: string };
      putMemories: { count: number; perSecond: number } | null;
      databaseMB: Record<string, { heap: number; indexes: number }>;
      machine: { memoryLatencyNs: number | null };
      searchMs: Record<
        string,
        {
          n: number;
          p50: number;
          p99: number;
          processMemoryMB: { heapUsed: number };
          postgresCpuMsPerQuery: number | null;
        }
      >;
    };
    expect(result.driver).toBe(driver);
    expect(result.records).toBe(300);
    expect(result.capabilities).toMatchObject({
      vectorSearch: driver === 'pglite' ? 'HNSW_INDEX' : 'EXACT_IN_MEMORY',
      fullText: 'INDEXED',
    });
    expect(result.putMemories?.count).toBe(100);
    expect(result.putMemories?.perSecond).toBeGreaterThan(0);
    expect(Object.keys(result.databaseMB).sort()).toEqual(['chunks', 'records']);
    for (const table of Object.values(result.databaseMB)) {
      expect(table.heap).toBeGreaterThan(0);
      expect(table.indexes).toBeGreaterThan(0);
    }
    expect(Object.keys(result.searchMs).sort()).toEqual(['hybrid', 'text', 'vector']);
    for (const kind of Object.values(result.searchMs)) {
      expect(kind.n).toBe(3);
      expect(kind.p99).toBeGreaterThanOrEqual(kind.p50);
      expect(kind.processMemoryMB.heapUsed).toBeGreaterThan(0);
      // PostgreSQL's CPU is read from a private cluster's processes (PG_CLUSTER_DIR); PGlite runs in the process.
      if (driver === 'postgres' && process.env['PG_CLUSTER_DIR'])
        expect(kind.postgresCpuMsPerQuery).toBeGreaterThanOrEqual(0);
      else expect(kind.postgresCpuMsPerQuery).toBeNull();
    }
    expect(result.machine.memoryLatencyNs).toBeGreaterThan(0);
    expect(readdirSync(out).some((f) => f.endsWith(`-memory-${driver}.json`))).toBe(true);
  });
});
