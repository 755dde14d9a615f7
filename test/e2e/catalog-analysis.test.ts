/**
 * The catalog's package pipeline over real HTTP on a real database: upload into quarantine (digests, 5 MB limit,
 * roles), the sandboxed analyzer (each kind of bad package stopped with its recorded reason; the analyzer's own
 * time and memory limits; what its process may and may not do), the signed in-toto statement, and recovery of an
 * analysis orphaned by a dead process.
 */
import { createHash, randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataOf, newPrincipal, type Principal } from '../src/subgraph-harness.js';
import { startCatalog, type CatalogHarness } from '../../subgraphs/catalog/test/harness.js';
import { goodPackage, manifest, renameEntry, zip } from '../../subgraphs/catalog/test/packages.js';
import {
  DEFAULT_SANDBOX_LIMITS,
  runSandbox,
  sandboxArgs,
  type SandboxLimits,
} from '../../subgraphs/catalog/src/index.js';
import { verifyEnvelope } from '../../subgraphs/catalog/src/analyzer/attestation.js';

let c: CatalogHarness;
const tenantId = randomUUID();
const owner: Principal = newPrincipal('OWNER', tenantId);
const publisher: Principal = newPrincipal('PUBLISHER', tenantId);

/** The analyzer limits of the running catalog: read for every analysis, so a test may change them. */
const analyzer: Partial<SandboxLimits> = {};
async function withLimits<T>(limits: Partial<SandboxLimits>, fn: () => Promise<T>): Promise<T> {
  Object.assign(analyzer, limits);
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(limits)) delete analyzer[k as keyof SandboxLimits];
  }
}

beforeAll(async () => {
  c = await startCatalog({ analyzer });
  await c.createPlugin(owner, 'hello');
});
afterAll(async () => {
  await c?.close();
});

let nextPatch = 0;
const version = () => `1.0.${nextPatch++}`;

async function analysed(body: (v: string) => Promise<Buffer>) {
  const v = version();
  const id = await c.uploadAnalysed(publisher, 'hello', v, await body(v));
  return c.release(owner, id);
}

describe('upload', () => {
  it('streams the package into quarantine with its SHA-256 and SHA-512 and queues its analysis', async () => {
    const v = version();
    const body = await goodPackage('hello', v);
    const r = await c.upload(publisher, 'hello', v, body);
    expect(r.status).toBe(202);
    expect(r.json).toMatchObject({
      plugin: 'hello',
      version: v,
      state: 'QUARANTINED',
      sizeBytes: body.length,
      sha256: createHash('sha256').update(body).digest('hex'),
      sha512: createHash('sha512').update(body).digest('hex'),
    });
    const before = await c.release(owner, r.json.releaseId);
    expect(before).toMatchObject({ state: 'QUARANTINED', analysis: { state: 'QUEUED', attempts: 0 } });
    expect(before.package.uploadedBy.id).toBe(publisher.userId);
    // The same version again: versions are immutable.
    expect((await c.upload(publisher, 'hello', v, body)).status).toBe(409);
    await c.catalog.analysis().drain();
    const after = await c.release(owner, r.json.releaseId);
    expect(after).toMatchObject({
      state: 'IN_REVIEW',
      analysis: { state: 'SUCCEEDED', verdict: 'PASS', findings: [] },
    });
  });

  it('refuses more than 5 MB, declared or streamed, keeps nothing and records why', async () => {
    const big = Buffer.alloc(5 * 1024 * 1024 + 1, 1);
    const v = version();
    const declared = await c.upload(publisher, 'hello', v, big);
    expect(declared.status).toBe(413);
    expect(declared.json.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    // Streamed without a length: stopped while streaming.
    const token = await c.h.token(publisher);
    const streamed = await fetch(`${c.base}/packages?plugin=hello&version=${v}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: new ReadableStream({
        start(ctrl) {
          for (let i = 0; i < 6; i++) ctrl.enqueue(new Uint8Array(1024 * 1024));
          ctrl.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    const { readdir } = await import('node:fs/promises');
    const stored = await readdir(join(c.storageDir, tenantId)).catch(() => []);
    const r = await c.h.gql(
      owner,
      `{ plugin(id: "${await pluginId()}") { releases(first: 50) { edges { node { id version state decisions { edges { node { action reason } } } } } } } }`,
    );
    const rel = (r.body.data as any).plugin.releases.edges.find((e: any) => e.node.version === v).node;
    expect(rel.state).toBe('AWAITING_UPLOAD');
    expect(rel.decisions.edges.map((e: any) => e.node.action)).toEqual([
      'UPLOAD_REJECTED',
      'UPLOAD_REJECTED',
    ]);
    expect(rel.decisions.edges[1].node.reason).toMatch(/over the limit of 5242880 bytes/);
    // Only the earlier test's package is stored: the refused ones left nothing behind.
    expect(stored.length).toBe(1);
  });

  it('needs a token, the PUBLISHER role or above, and an existing plugin', async () => {
    const body = await goodPackage('hello', '9.9.9');
    expect((await c.upload(null, 'hello', '9.9.9', body)).status).toBe(401);
    expect((await c.upload(newPrincipal('VIEWER', tenantId), 'hello', '9.9.9', body)).status).toBe(403);
    expect((await c.upload(newPrincipal('OPERATOR', tenantId), 'hello', '9.9.9', body)).status).toBe(403);
    expect((await c.upload(publisher, 'nope', '9.9.9', body)).status).toBe(404);
    expect((await c.upload(publisher, 'hello', '9.9', body)).status).toBe(400);
    // Another tenant's publisher does not see the plugin.
    expect((await c.upload(newPrincipal('PUBLISHER'), 'hello', '9.9.9', body)).status).toBe(404);
  });
});

let cachedPluginId: string | undefined;
async function pluginId(): Promise<string> {
  if (cachedPluginId) return cachedPluginId;
  const r = await c.h.gql(owner, '{ plugins(first: 5) { edges { node { id name } } } }');
  cachedPluginId = (r.body.data as any).plugins.edges.find((e: any) => e.node.name === 'hello').node.id;
  return cachedPluginId!;
}

describe('bad packages are stopped by analysis, each with its reason on record', () => {
  const cases: Array<[string, (v: string) => Promise<Buffer>, string, RegExp]> = [
    [
      'zip bomb',
      (v) =>
        zip([
          manifest('hello', v),
          { name: 'index.js', data: 'x' },
          { name: 'big.bin', data: Buffer.alloc(20 * 1024 * 1024) },
        ]),
      'zip-bomb',
      /compression ratio \d+:1 is over the limit of 100:1|per-entry limit/,
    ],
    [
      'path traversal',
      async (v) =>
        renameEntry(
          await zip([
            manifest('hello', v),
            { name: 'index.js', data: 'x' },
            { name: 'zz/evil.js', data: 'x' },
          ]),
          'zz/evil.js',
          '../evil.js',
        ),
      'path-traversal',
      /path traversal/,
    ],
    [
      'absolute path',
      async (v) =>
        renameEntry(
          await zip([
            manifest('hello', v),
            { name: 'index.js', data: 'x' },
            { name: 'zetc/cron', data: 'x' },
          ]),
          'zetc/cron',
          '/etc/cron',
        ),
      'absolute-path',
      /absolute path/,
    ],
    [
      'symbolic link',
      (v) =>
        zip([
          manifest('hello', v),
          { name: 'index.js', data: 'x' },
          { name: 'link', data: '/etc/passwd', mode: 0o120777 },
        ]),
      'symlink',
      /symlink entries are not allowed/,
    ],
    [
      'device file',
      (v) =>
        zip([
          manifest('hello', v),
          { name: 'index.js', data: 'x' },
          { name: 'dev', data: '', mode: 0o020644 },
        ]),
      'special-file',
      /device entries/,
    ],
    [
      'invalid manifest',
      (v) =>
        zip([
          {
            name: 'manifest.json',
            data: JSON.stringify({ name: 'hello', version: v, main: '../x.js', extra: 1 }),
          },
          { name: 'index.js', data: 'x' },
        ]),
      'invalid-manifest',
      /does not match its schema/,
    ],
    [
      'undeclared capability',
      (v) =>
        zip([
          manifest('hello', v),
          {
            name: 'index.js',
            data: "import { readFile } from 'node:fs/promises';\nfetch('https://x.test');",
          },
        ]),
      'undeclared-capability',
      /capability "fs".*not declare/,
    ],
    [
      'forbidden import',
      (v) =>
        zip([
          manifest('hello', v, { capabilities: ['fs', 'network'] }),
          { name: 'index.js', data: "const cp = require('child_process'); new Function('return 1');" },
        ]),
      'forbidden-import',
      /"child_process"/,
    ],
    [
      'manifest for another plugin',
      (v) => zip([manifest('other', v), { name: 'index.js', data: 'x' }]),
      'manifest-mismatch',
      /names other@/,
    ],
  ];
  it.each(cases)('%s', async (_name, build, rule, message) => {
    const r = await analysed(build);
    expect(r.state).toBe('ANALYSIS_FAILED');
    expect(r.analysis).toMatchObject({ state: 'SUCCEEDED', verdict: 'FAIL' });
    const finding = r.analysis.findings.find((f: any) => f.rule === rule);
    expect(finding, JSON.stringify(r.analysis.findings)).toBeDefined();
    expect(finding.message).toMatch(message);
    expect(r.stateReason).toContain(rule);
    const actions = r.decisions.edges.map((e: any) => e.node.action);
    expect(actions).toEqual(['UPLOADED', 'ANALYSIS_FAILED']);
    expect(r.decisions.edges[1].node).toMatchObject({ actor: null, reason: r.stateReason });
  });

  it('the undeclared capability passes once the manifest declares it', async () => {
    const r = await analysed((v) =>
      zip([
        manifest('hello', v, { capabilities: ['fs', 'network'] }),
        { name: 'index.js', data: "import { readFile } from 'node:fs/promises';\nfetch('https://x.test');" },
      ]),
    );
    expect(r).toMatchObject({ state: 'IN_REVIEW', analysis: { verdict: 'PASS' } });
  });
});

describe('the analyzer process', () => {
  it('signs its result: an in-toto statement about the package digests in a DSSE envelope', async () => {
    const r = await analysed((v) => goodPackage('hello', v));
    const jwks = JSON.parse(dataOf(await c.h.gql(owner, '{ analyzerJwks }')).analyzerJwks as string);
    const key = jwks.keys.find((k: { kid: string }) => k.kid === r.analysis.keyId);
    expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
    expect(key.d).toBeUndefined();
    const envelope = JSON.parse(r.analysis.envelope);
    expect(envelope.payloadType).toBe('application/vnd.in-toto+json');
    const statement: any = verifyEnvelope(envelope, key);
    expect(statement).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [
        { name: `hello-${r.version}.zip`, digest: { sha256: r.package.sha256, sha512: r.package.sha512 } },
      ],
      predicateType: 'https://agentgraph.dev/attestations/plugin-analysis/v1',
      predicate: { verdict: 'PASS', findings: [], plugin: 'hello', version: r.version },
    });
    // A changed payload no longer verifies.
    const forged = {
      ...envelope,
      payload: Buffer.from(
        JSON.stringify({ ...statement, predicate: { verdict: 'PASS', findings: [] } }),
      ).toString('base64'),
    };
    expect(verifyEnvelope(forged, key)).toBeNull();
  });

  it('may read the package and its own code only: no other file, no writes, no processes, no workers', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-probe-'));
    try {
      const pkg = join(dir, 'p.zip');
      await writeFile(pkg, await goodPackage('hello', '1.0.0'));
      const args = sandboxArgs(pkg, DEFAULT_SANDBOX_LIMITS, { plugin: 'hello', version: '1.0.0' });
      const flags = args.slice(
        0,
        args.findIndex((a) => a.endsWith('sandbox-main.mjs')),
      );
      expect(
        flags.some(
          (f) =>
            f.startsWith('--allow-child-process') ||
            f.startsWith('--allow-worker') ||
            f.startsWith('--allow-fs-write'),
        ),
      ).toBe(false);
      // Run a probe under exactly these flags (the probe is passed with -e, read permission is what counts).
      const probe = `
        const fs = require('node:fs'); const out = {};
        const t = (k, f) => { try { f(); out[k] = 'allowed'; } catch (e) { out[k] = e.code; } };
        t('readPackage', () => fs.readFileSync(${JSON.stringify(pkg)}));
        t('readOther', () => fs.readFileSync('/etc/hostname'));
        t('readDatabaseDir', () => fs.readdirSync(${JSON.stringify(c.storageDir)}));
        t('write', () => fs.writeFileSync(${JSON.stringify(join(dir, 'x'))}, 'x'));
        t('spawn', () => require('node:child_process').spawnSync('true'));
        t('worker', () => new (require('node:worker_threads').Worker)('1', { eval: true }));
        console.log(JSON.stringify(out));`;
      const r = spawnSync(process.execPath, [...flags, '-e', probe], { encoding: 'utf8' });
      expect(JSON.parse(r.stdout)).toEqual({
        readPackage: 'allowed',
        readOther: 'ERR_ACCESS_DENIED',
        readDatabaseDir: 'ERR_ACCESS_DENIED',
        write: 'ERR_ACCESS_DENIED',
        spawn: 'ERR_ACCESS_DENIED',
        worker: 'ERR_ACCESS_DENIED',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('over its memory limit: ANALYSIS_FAILED with the reason', async () => {
    // A manifest of a million empty objects: within the (raised) archive limits, far over a 16 MB heap.
    const v = version();
    const huge = `{"name":"hello","version":"${v}","main":"index.js","x":[${'{},'.repeat(1_000_000)}{}]}`;
    const body = await zip([
      { name: 'manifest.json', data: huge },
      { name: 'index.js', data: 'x' },
    ]);
    const r = await withLimits(
      { maxHeapMb: 16, maxManifestBytes: 8 * 1024 * 1024, maxRatio: 100_000 },
      async () => c.release(owner, await c.uploadAnalysed(publisher, 'hello', v, body)),
    );
    expect(r).toMatchObject({ state: 'ANALYSIS_FAILED', analysis: { state: 'FAILED', verdict: 'FAIL' } });
    expect(r.stateReason).toBe('the analyzer ran out of memory (heap limit 16 MB)');
  });

  it('over its time limit: killed, ANALYSIS_FAILED with the reason', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-time-'));
    try {
      const pkg = join(dir, 'p.zip');
      await writeFile(pkg, await goodPackage('hello', '1.0.0'));
      // 1 ms: no Node process starts, let alone analyses, that fast.
      const outcome = await runSandbox(
        pkg,
        { plugin: 'hello', version: '1.0.0' },
        { ...DEFAULT_SANDBOX_LIMITS, timeoutMs: 1 },
      );
      expect(outcome).toEqual({
        kind: 'failed',
        reason: 'the analyzer exceeded its time limit of 1 ms and was killed',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const v = version();
    const body = await goodPackage('hello', v);
    const r = await withLimits({ timeoutMs: 1 }, async () =>
      c.release(owner, await c.uploadAnalysed(publisher, 'hello', v, body)),
    );
    expect(r.stateReason).toBe('the analyzer exceeded its time limit of 1 ms and was killed');
    expect(r.analysis).toMatchObject({ state: 'FAILED', verdict: 'FAIL', attempts: 1 });
  });

  it('an analysis orphaned by a dead process is claimed again once stale, and finishes', async () => {
    const v = version();
    const r = await c.upload(publisher, 'hello', v, await goodPackage('hello', v));
    const { db } = c.catalog.deps();
    // A process claimed it and died: RUNNING since an hour ago.
    await db.transaction(
      (tx) =>
        tx.query(
          `UPDATE catalog.analyses SET state = 'RUNNING', attempts = 1, started_at = now() - interval '1 hour' WHERE release_id = $1`,
          [r.json.releaseId],
        ),
      { 'app.tenant_id': tenantId, 'app.principal_id': 'test' },
    );
    await c.catalog.analysis().drain();
    const after = await c.release(owner, r.json.releaseId);
    expect(after).toMatchObject({ state: 'IN_REVIEW', analysis: { state: 'SUCCEEDED', attempts: 2 } });
  });
});
