/**
 * Catalog supply-chain timings: `npx tsx bench/src/catalog-bench.ts [--runs 5] [--targets 1000]` prints JSON.
 *
 * - analysis: a 5 MB package (a manifest and JavaScript files of varied text, ~5 MB compressed) through the real
 *   sandbox (a `node --experimental-permission` process per run: start-up, unpack, manifest, static checks), and the
 *   same analysis in-process, so the sandbox's own cost shows;
 * - signing: a channel with N targets re-signed and stored (channel role, snapshot, timestamp: what approve,
 *   promote and revoke do) on an in-memory PGlite database (or DATABASE_URL), after the first publish.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { keyVault, loadConfig, openDatabase } from '@agentgraph/runtime';
import {
  createCatalogSubgraph,
  DEFAULT_SANDBOX_LIMITS,
  runSandbox,
} from '../../subgraphs/catalog/src/index.js';
import { analyzePackage } from '../../subgraphs/catalog/src/analyzer/analyze.mjs';
import {
  openRepository,
  publishChannels,
  DEFAULT_TUF_SETTINGS,
} from '../../subgraphs/catalog/src/tuf/repository.js';
import { zip } from '../../subgraphs/catalog/test/packages.js';
import { provisionTestDatabase } from '../../test/src/database.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, targets: { type: 'string', default: '1000' } },
});
const RUNS = Math.max(1, Number(values.runs));
const TARGETS = Math.max(1, Number(values.targets));

const stats = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const r = (ms: number) => Math.round(ms * 10) / 10;
  return {
    runs: times.length,
    medianMs: r(median),
    minMs: r(sorted[0]!),
    maxMs: r(sorted[sorted.length - 1]!),
  };
};

/** JavaScript-looking text that compresses about as well as real code (random identifiers, repeated syntax). */
function sourceFile(bytes: number): string {
  let out = '';
  while (out.length < bytes) {
    const id = randomBytes(6)
      .toString('base64url')
      .replace(/[^a-z]/gi, 'x');
    out += `export function ${id}(a, b) { const v_${id} = a * ${out.length % 97} + b; return v_${id} > 0 ? "${randomBytes(12).toString('hex')}" : null; }\n`;
  }
  return out.slice(0, bytes);
}

async function fiveMbPackage(): Promise<Buffer> {
  const entries = [
    {
      name: 'manifest.json',
      data: JSON.stringify({ name: 'bench', version: '1.0.0', main: 'src/f0.js', capabilities: [] }),
    },
  ];
  let archive: Buffer = Buffer.alloc(0);
  for (let i = 0; archive.length < 5 * 1024 * 1024 - 200 * 1024; i++) {
    entries.push({ name: `src/f${i}.js`, data: sourceFile(200 * 1024) });
    archive = await zip(entries);
  }
  return archive;
}

async function analysisBench() {
  const dir = await mkdtemp(join(tmpdir(), 'catalog-bench-'));
  try {
    const pkg = await fiveMbPackage();
    const path = join(dir, 'bench.zip');
    await writeFile(path, pkg);
    const expected = { plugin: 'bench', version: '1.0.0' };
    const sandbox: number[] = [];
    const inProcess: number[] = [];
    let outcome: Awaited<ReturnType<typeof runSandbox>> | undefined;
    for (let i = 0; i < RUNS; i++) {
      let t = performance.now();
      outcome = await runSandbox(path, expected, DEFAULT_SANDBOX_LIMITS);
      sandbox.push(performance.now() - t);
      t = performance.now();
      await analyzePackage(pkg, expected, DEFAULT_SANDBOX_LIMITS);
      inProcess.push(performance.now() - t);
    }
    return {
      packageBytes: pkg.length,
      outcome:
        outcome!.kind === 'analysed'
          ? { files: outcome!.files, bytes: outcome!.bytes, findings: outcome!.findings.length }
          : outcome,
      sandbox: stats(sandbox),
      inProcess: stats(inProcess),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function signingBench() {
  const testDb = await provisionTestDatabase();
  const config = loadConfig({ ...testDb.env, HOST: '127.0.0.1' });
  const { db, handle } = await openDatabase(
    config,
    [createCatalogSubgraph({ pollIntervalMs: 0 }).migrations],
    'catalog',
  );
  const tenantId = randomUUID();
  const inTenant = <T>(fn: Parameters<typeof db.transaction>[0]) =>
    db.transaction(fn, { 'app.tenant_id': tenantId, 'app.principal_id': 'bench' }) as Promise<T>;
  try {
    await inTenant(async (tx) => {
      const p = await tx.query<{ id: string }>(
        `INSERT INTO catalog.plugins (tenant_id, name, display_name, publisher) VALUES ($1, 'bench', 'Bench', 'bench') RETURNING id`,
        [tenantId],
      );
      const pluginId = p.rows[0]!.id;
      await tx.query(
        `WITH r AS (
           INSERT INTO catalog.releases (tenant_id, plugin_id, version, created_by, state)
           SELECT $1, $2, '1.0.' || g, 'bench', 'APPROVED' FROM generate_series(1, $3) g RETURNING id, version)
         INSERT INTO catalog.tuf_targets (tenant_id, release_id, channel, path, length, sha256, sha512, storage_key)
         SELECT $1, r.id, 'alpha', 'alpha/bench/bench-' || r.version || '.zip', 1000,
                encode(sha256(r.version::bytea), 'hex'), encode(sha512(r.version::bytea), 'hex'), 'k' FROM r`,
        [tenantId, pluginId, TARGETS],
      );
      await openRepository(tx, tenantId, new Date(), DEFAULT_TUF_SETTINGS, keyVault(config));
    });
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      await inTenant(async (tx) => {
        const state = await openRepository(tx, tenantId, new Date(), DEFAULT_TUF_SETTINGS, keyVault(config));
        await publishChannels(tx, state, ['alpha'], new Date(), DEFAULT_TUF_SETTINGS);
      });
      times.push(performance.now() - t);
    }
    const bytes = await inTenant(async (tx) => {
      const r = await tx.query<{ n: number }>(
        `SELECT octet_length(body) AS n FROM catalog.tuf_metadata WHERE role = 'alpha' ORDER BY version DESC LIMIT 1`,
      );
      return Number(r.rows[0]!.n);
    });
    return { driver: testDb.driver, targets: TARGETS, channelMetadataBytes: bytes, publish: stats(times) };
  } finally {
    await handle.close();
    await testDb.drop();
  }
}

const analysis = await analysisBench();
const signing = await signingBench();
console.log(JSON.stringify({ bench: 'catalog', node: process.version, analysis, signing }, null, 2));
