/**
 * The catalog's TUF repository against the real TUF client (tuf-js `Updater`) over real HTTP: an approved package is
 * refreshed and downloaded; a tampered package, a rolled-back snapshot or timestamp, an expired timestamp and
 * metadata signed by a revoked key are refused; after a root rotation the client still updates; a revoked version is
 * gone on the next refresh. Attacks are played by a mirror (an HTTP proxy in front of the catalog that can replace
 * files). Also: review with separation of duties, appeal, promotion, and the append-only audit trail.
 */
import { createServer, type Server } from 'node:http';
import { createPrivateKey, randomUUID, sign } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, MetadataKind, Signature } from '@tufjs/models';
import { Updater } from 'tuf-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf, dataOf, newPrincipal, type Principal } from '../src/subgraph-harness.js';
import { startCatalog, type CatalogHarness } from '../../subgraphs/catalog/test/harness.js';
import { goodPackage } from '../../subgraphs/catalog/test/packages.js';
import { DEFAULT_TUF_SETTINGS, refreshRepositories } from '../../subgraphs/catalog/src/index.js';
import { sealContextOf } from '../../subgraphs/catalog/src/tuf/keys.js';

let c: CatalogHarness;
const tenantId = randomUUID();
const owner: Principal = newPrincipal('OWNER', tenantId);
const admin: Principal = newPrincipal('ADMIN', tenantId);
const publisher: Principal = newPrincipal('PUBLISHER', tenantId);
/** An owner who uploads: may not approve their own package either. */
const uploadingOwner: Principal = newPrincipal('OWNER', tenantId);

/** The TUF settings of the running catalog: read for every publish, so a test may change them. */
const tuf: Partial<typeof DEFAULT_TUF_SETTINGS> = {};

/** The mirror: forwards to the catalog, except for paths given a replacement body. */
const overrides = new Map<string, Buffer | string>();
let mirror: Server;
let mirrorUrl: string;
const dirs: string[] = [];

beforeAll(async () => {
  // Uploads start their analysis themselves here (as in production); uploadAnalysed's drain() joins that run.
  c = await startCatalog({ analyseOnUpload: true, tuf });
  await c.createPlugin(owner, 'hello');
  await c.createPlugin(owner, 'other');
  mirror = createServer((req, res) => {
    const path = req.url ?? '/';
    const replaced = overrides.get(path);
    if (replaced !== undefined) {
      res.writeHead(200, { 'content-length': Buffer.byteLength(replaced) }).end(replaced);
      return;
    }
    fetch(`${c.base}${path}`)
      .then(async (r) => {
        const body = Buffer.from(await r.arrayBuffer());
        res.writeHead(r.status, { 'content-length': body.length }).end(body);
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
  mirrorUrl = `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => (mirror ? mirror.close(() => r()) : r()));
  await c?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const tufBase = () => `/tuf/${tenantId}`;

async function get(path: string): Promise<string> {
  const r = await fetch(`${c.base}${path}`);
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status}`);
  return r.text();
}

/** A fresh client that trusts 1.root.json (distributed out of band), reading through the mirror. */
async function client(existingDir?: string) {
  const dir = existingDir ?? (await mkdtemp(join(tmpdir(), 'tuf-client-')));
  if (!existingDir) {
    dirs.push(dir);
    await writeFile(join(dir, 'root.json'), await get(`${tufBase()}/metadata/1.root.json`));
  }
  const updater = new Updater({
    metadataDir: dir,
    metadataBaseUrl: `${mirrorUrl}${tufBase()}/metadata`,
    targetBaseUrl: `${mirrorUrl}${tufBase()}/targets`,
    targetDir: dir,
    config: { fetchRetries: 0 },
  });
  return { updater, dir };
}

async function approved(plugin: string, v: string): Promise<{ id: string; body: Buffer }> {
  const body = await goodPackage(plugin, v);
  const id = await c.uploadAnalysed(publisher, plugin, v, body);
  dataOf(await c.mutate(admin, 'approveRelease', { releaseId: id }));
  return { id, body };
}

async function latestVersion(role: 'timestamp' | 'snapshot'): Promise<number> {
  const r = dataOf(await c.h.gql(owner, '{ tufRepository { timestampVersion snapshotVersion } }'));
  return role === 'timestamp' ? r.tufRepository.timestampVersion : r.tufRepository.snapshotVersion;
}

let first: { id: string; body: Buffer };

describe('review', () => {
  it('separation of duties: the uploader never approves or rejects their own package, even as OWNER', async () => {
    const id = await c.uploadAnalysed(uploadingOwner, 'hello', '0.1.0', await goodPackage('hello', '0.1.0'));
    const own = await c.mutate(uploadingOwner, 'approveRelease', { releaseId: id });
    expect(codeOf(own)).toBe('FORBIDDEN');
    expect(own.body.errors![0]!.message).toMatch(/separation of duties/);
    expect(codeOf(await c.mutate(uploadingOwner, 'rejectRelease', { releaseId: id, reason: 'mine' }))).toBe(
      'FORBIDDEN',
    );
    // A publisher may not review at all; nothing changed.
    expect(codeOf(await c.mutate(publisher, 'approveRelease', { releaseId: id }))).toBe('FORBIDDEN');
    expect((await c.release(owner, id)).state).toBe('IN_REVIEW');
    // In the queue until someone else decides.
    const queue = dataOf(await c.h.gql(admin, '{ reviewQueue(first: 10) { edges { node { id state } } } }'));
    expect(queue.reviewQueue.edges.map((e: any) => e.node.id)).toContain(id);
  });

  it('reject with a reason, appeal by the uploader only, then approve: every step audited in order', async () => {
    const id = await c.uploadAnalysed(publisher, 'other', '1.0.0', await goodPackage('other', '1.0.0'));
    const rejected = dataOf(
      await c.mutate(admin, 'rejectRelease', { releaseId: id, reason: 'needs a README' }),
    );
    expect(rejected.rejectRelease.release).toMatchObject({
      state: 'REJECTED',
      stateReason: 'needs a README',
    });
    expect(codeOf(await c.mutate(admin, 'appealRelease', { releaseId: id, reason: 'x' }))).toBe('FORBIDDEN');
    dataOf(
      await c.mutate(publisher, 'appealRelease', {
        releaseId: id,
        reason: 'README added to the description',
      }),
    );
    const r = dataOf(await c.mutate(owner, 'approveRelease', { releaseId: id })).approveRelease.release;
    expect(r).toMatchObject({
      state: 'APPROVED',
      channel: 'ALPHA',
      targetPath: 'alpha/other/other-1.0.0.zip',
    });
    expect(
      r.decisions.edges.map((e: any) => [e.node.action, e.node.actor?.id ?? null, e.node.reason]),
    ).toEqual([
      ['UPLOADED', publisher.userId, null],
      ['ANALYSIS_PASSED', null, null],
      ['REJECTED', admin.userId, 'needs a README'],
      ['APPEALED', publisher.userId, 'README added to the description'],
      ['APPROVED', owner.userId, null],
    ]);
    // Append-only, even for the table's owner.
    const { db } = c.catalog.deps();
    await expect(
      db.transaction(
        (tx) => tx.query(`UPDATE catalog.review_events SET reason = 'x' WHERE release_id = $1`, [id]),
        {
          'app.tenant_id': tenantId,
          'app.principal_id': 'test',
        },
      ),
    ).rejects.toThrow();
  });

  it('approving twice with one idempotency key replays; a second decision is refused', async () => {
    const body = await goodPackage('hello', '0.2.0');
    const id = await c.uploadAnalysed(publisher, 'hello', '0.2.0', body);
    const key = randomUUID();
    const q = `mutation ($id: ID!, $key: ID!) { approveRelease(releaseId: $id, idempotencyKey: $key) { release { state channel } } }`;
    const a = await c.h.gql(admin, q, { id, key });
    const b = await c.h.gql(admin, q, { id, key });
    expect(dataOf(a)).toEqual(dataOf(b));
    expect(b.body.extensions?.['idempotentReplay']).toBe(true);
    expect(codeOf(await c.mutate(owner, 'approveRelease', { releaseId: id }))).toBe('BAD_USER_INPUT');
  });
});

describe('tuf-js against the served repository', () => {
  it('refreshes and downloads an approved package', async () => {
    first = await approved('hello', '1.0.0');
    const { updater, dir } = await client();
    await updater.refresh();
    const info = await updater.getTargetInfo('alpha/hello/hello-1.0.0.zip');
    expect(info).toBeDefined();
    const path = await updater.downloadTarget(info!, join(dir, 'hello.zip'));
    expect(await readFile(path)).toEqual(first.body);
    // Not in another channel's paths.
    expect(await updater.getTargetInfo('stable/hello/hello-1.0.0.zip')).toBeUndefined();
  });

  it('refuses a tampered package', async () => {
    const { updater, dir } = await client();
    await updater.refresh();
    const info = (await updater.getTargetInfo('alpha/hello/hello-1.0.0.zip'))!;
    const tampered = Buffer.from(first.body);
    tampered[tampered.length - 30]! ^= 0xff;
    overrides.set(`${tufBase()}/targets/alpha/hello/${info.hashes['sha256']}.hello-1.0.0.zip`, tampered);
    try {
      await expect(updater.downloadTarget(info, join(dir, 't.zip'))).rejects.toThrow(/hash|length|mismatch/i);
    } finally {
      overrides.clear();
    }
  });

  it('refuses a rolled-back snapshot and a rolled-back timestamp', async () => {
    const oldTimestamp = await get(`${tufBase()}/metadata/timestamp.json`);
    await approved('hello', '1.1.0');
    const n = await latestVersion('snapshot');
    // The mirror serves the previous snapshot under the name of the current one.
    overrides.set(
      `${tufBase()}/metadata/${n}.snapshot.json`,
      await get(`${tufBase()}/metadata/${n - 1}.snapshot.json`),
    );
    try {
      const { updater } = await client();
      await expect(updater.refresh()).rejects.toThrow(/version/i);
    } finally {
      overrides.clear();
    }
    // A client that has seen the current timestamp is then offered the old one.
    const { updater, dir } = await client();
    await updater.refresh();
    overrides.set(`${tufBase()}/metadata/timestamp.json`, oldTimestamp);
    try {
      const again = await client(dir);
      await expect(again.updater.refresh()).rejects.toThrow(/version/i);
    } finally {
      overrides.clear();
    }
  });

  it('refuses an expired timestamp, and the scheduled re-signing makes the repository fresh again', async () => {
    // The server's clock is three days behind: what it signs now expires (timestamp: 1 day) two days ago.
    c.clock.offsetMs = -3 * 24 * 3600_000;
    try {
      await approved('hello', '1.2.0');
    } finally {
      c.clock.offsetMs = 0;
    }
    const stale = await client();
    await expect(stale.updater.refresh()).rejects.toThrow(/expired/i);
    const { db, vault } = c.catalog.deps();
    expect(await refreshRepositories(db, new Date(), DEFAULT_TUF_SETTINGS, vault)).toBeGreaterThanOrEqual(1);
    const fresh = await client();
    await fresh.updater.refresh();
    expect(await fresh.updater.getTargetInfo('alpha/hello/hello-1.2.0.zip')).toBeDefined();
    // Nothing is due right after: the pass re-signs nothing.
    const before = await latestVersion('timestamp');
    await refreshRepositories(db, new Date(), DEFAULT_TUF_SETTINGS, vault);
    expect(await latestVersion('timestamp')).toBe(before);
  });

  it('refuses metadata signed by a revoked key (timestamp key rotated)', async () => {
    const { db, vault } = c.catalog.deps();
    const inTenant = <T>(fn: (tx: any) => Promise<T>) =>
      db.transaction(fn, { 'app.tenant_id': tenantId, 'app.principal_id': 'test' });
    const oldKey = await inTenant(async (tx) => {
      const r = await tx.query(
        `SELECT key_id, private_key FROM catalog.signing_keys WHERE role = 'timestamp' AND state = 'active'`,
      );
      return r.rows[0] as { key_id: string; private_key: string };
    });
    expect(codeOf(await c.mutate(admin, 'rotateTufKey', { role: 'TIMESTAMP' }))).toBe('FORBIDDEN');
    const rotated = dataOf(await c.mutate(owner, 'rotateTufKey', { role: 'TIMESTAMP' }));
    expect(rotated.rotateTufKey.role).toBe('TIMESTAMP');
    // Whoever holds the revoked key signs a newer timestamp; the mirror serves it.
    const current = JSON.parse(await get(`${tufBase()}/metadata/timestamp.json`));
    const forged = Metadata.fromJSON(MetadataKind.Timestamp, {
      signed: { ...current.signed, version: current.signed.version + 1 },
      signatures: [],
    });
    forged.sign(
      (data) =>
        new Signature({
          keyID: oldKey.key_id,
          // (The key is stored sealed: whoever holds it also holds a key-encryption key.)
          sig: sign(
            null,
            data,
            createPrivateKey(vault.open(oldKey.private_key, sealContextOf(tenantId, oldKey.key_id))),
          ).toString('hex'),
        }),
    );
    overrides.set(`${tufBase()}/metadata/timestamp.json`, JSON.stringify(forged.toJSON()));
    try {
      const { updater } = await client();
      await expect(updater.refresh()).rejects.toThrow(/timestamp was signed by 0\/1 keys/);
    } finally {
      overrides.clear();
    }
    // The real (new-key) timestamp works.
    const { updater } = await client();
    await updater.refresh();
  });

  it('still updates after a root rotation (new root signed by the old and the new root keys)', async () => {
    const { updater: before, dir } = await client();
    await before.refresh();
    const r = dataOf(await c.mutate(owner, 'rotateTufKey', { role: 'ROOT' }));
    const rootVersion = r.rotateTufKey.rootVersion as number;
    const root = JSON.parse(await get(`${tufBase()}/metadata/${rootVersion}.root.json`));
    expect(Object.keys(root.signatures).length).toBe(2);
    await approved('hello', '1.3.0');
    // A client that trusted the earlier root, and a fresh one from 1.root.json, both follow the chain.
    for (const { updater, dir: d } of [await client(dir), await client()]) {
      await updater.refresh();
      const info = await updater.getTargetInfo('alpha/hello/hello-1.3.0.zip');
      expect(info).toBeDefined();
      await updater.downloadTarget(info!, join(d, `h-${randomUUID()}.zip`));
    }
  });

  it('rotates the targets, snapshot and a channel role: clients that trusted the old keys follow', async () => {
    const { updater: before, dir } = await client();
    await before.refresh();
    for (const role of ['TARGETS', 'SNAPSHOT', 'ALPHA']) {
      dataOf(await c.mutate(owner, 'rotateTufKey', { role }));
      for (const { updater } of [await client(dir), await client()]) {
        await updater.refresh();
        expect(await updater.getTargetInfo('alpha/hello/hello-1.3.0.zip'), role).toBeDefined();
      }
    }
    // Revoked keys sign nothing any more; each role has exactly its threshold of active keys.
    const { db } = c.catalog.deps();
    const active = await db.transaction(
      (tx) =>
        tx.query<{ role: string; n: string }>(
          `SELECT role, count(*)::text AS n FROM catalog.signing_keys WHERE state = 'active' AND role <> 'analyzer' GROUP BY role ORDER BY role`,
        ),
      { 'app.tenant_id': tenantId, 'app.principal_id': 'test' },
    );
    expect(active.rows.map((r) => [r.role, Number(r.n)])).toEqual(
      ['alpha', 'beta', 'root', 'snapshot', 'stable', 'targets', 'timestamp'].map((r) => [r, 1]),
    );
  });

  it('promotes alpha → beta → stable, and a revoked version is gone on the next refresh', async () => {
    const { updater, dir } = await client();
    await updater.refresh();
    expect(await updater.getTargetInfo('alpha/hello/hello-1.0.0.zip')).toBeDefined();
    const beta = dataOf(await c.mutate(admin, 'promoteRelease', { releaseId: first.id })).promoteRelease
      .release;
    expect(beta).toMatchObject({ channel: 'BETA', targetPath: 'beta/hello/hello-1.0.0.zip' });
    expect(codeOf(await c.mutate(publisher, 'promoteRelease', { releaseId: first.id }))).toBe('FORBIDDEN');
    dataOf(await c.mutate(admin, 'promoteRelease', { releaseId: first.id }));
    expect(codeOf(await c.mutate(admin, 'promoteRelease', { releaseId: first.id }))).toBe('BAD_USER_INPUT');
    const stable = await client(dir);
    await stable.updater.refresh();
    expect(await stable.updater.getTargetInfo('alpha/hello/hello-1.0.0.zip')).toBeUndefined();
    const info = await stable.updater.getTargetInfo('stable/hello/hello-1.0.0.zip');
    expect(info).toBeDefined();

    const revoked = dataOf(
      await c.mutate(admin, 'revokeRelease', { releaseId: first.id, reason: 'CVE-2026-0001' }),
    );
    expect(revoked.revokeRelease.release).toMatchObject({
      state: 'REVOKED',
      stateReason: 'CVE-2026-0001',
      channel: null,
      targetPath: null,
    });
    const after = await client(dir);
    await after.updater.refresh();
    expect(await after.updater.getTargetInfo('stable/hello/hello-1.0.0.zip')).toBeUndefined();
    // And its bytes are no longer served.
    const gone = await fetch(
      `${c.base}${tufBase()}/targets/stable/hello/${info!.hashes['sha256']}.hello-1.0.0.zip`,
    );
    expect(gone.status).toBe(404);
  });

  it('serves nothing for another tenant, an unknown file or a write', async () => {
    expect((await fetch(`${c.base}/tuf/${randomUUID()}/metadata/1.root.json`)).status).toBe(404);
    expect((await fetch(`${c.base}${tufBase()}/metadata/99.root.json`)).status).toBe(404);
    expect((await fetch(`${c.base}${tufBase()}/metadata/../x`)).status).toBe(404);
    expect((await fetch(`${c.base}${tufBase()}/metadata/1.root.json`, { method: 'POST' })).status).toBe(405);
  });
});

describe('thresholds', () => {
  it('are configurable per role: two timestamp keys must sign, one signature is not enough', async () => {
    // Another tenant, whose repository is created while root and timestamp need two signatures.
    const t2 = randomUUID();
    const [o2, a2, p2] = [
      newPrincipal('OWNER', t2),
      newPrincipal('ADMIN', t2),
      newPrincipal('PUBLISHER', t2),
    ];
    await c.createPlugin(o2, 'hello');
    const id = await c.uploadAnalysed(p2, 'hello', '1.0.0', await goodPackage('hello', '1.0.0'));
    tuf.thresholds = { ...DEFAULT_TUF_SETTINGS.thresholds, root: 2, timestamp: 2 };
    try {
      dataOf(await c.mutate(a2, 'approveRelease', { releaseId: id }));
    } finally {
      delete tuf.thresholds;
    }
    const tmp = await mkdtemp(join(tmpdir(), 'tuf-threshold-'));
    dirs.push(tmp);
    const base = `${c.base}/tuf/${t2}`;
    const root = JSON.parse(await (await fetch(`${base}/metadata/1.root.json`)).text());
    expect(root.signed.roles.root).toMatchObject({ threshold: 2 });
    expect(root.signed.roles.timestamp.keyids).toHaveLength(2);
    expect(root.signatures).toHaveLength(2);
    await writeFile(join(tmp, 'root.json'), JSON.stringify(root));
    const timestamp = JSON.parse(await (await fetch(`${base}/metadata/timestamp.json`)).text());
    expect(timestamp.signatures).toHaveLength(2);
    // The mirror drops one of the two timestamp signatures.
    overrides.set(
      `/tuf/${t2}/metadata/timestamp.json`,
      JSON.stringify({ ...timestamp, signatures: timestamp.signatures.slice(0, 1) }),
    );
    const u = (url: string) =>
      new Updater({
        metadataDir: tmp,
        metadataBaseUrl: `${url}/tuf/${t2}/metadata`,
        config: { fetchRetries: 0 },
      });
    try {
      await expect(u(mirrorUrl).refresh()).rejects.toThrow(/timestamp was signed by 1\/2 keys/);
    } finally {
      overrides.clear();
    }
    await u(c.base).refresh();
    // The first tenant's repository kept its own thresholds.
    const first = JSON.parse(await get(`${tufBase()}/metadata/1.root.json`));
    expect(first.signed.roles.timestamp.threshold).toBe(1);
  });
});
