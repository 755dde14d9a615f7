/**
 * The catalog subgraph served alone over real HTTP (test/src/subgraph-harness.ts) with a fake clock, a package
 * directory of its own and the analysis queue drained by hand, plus helpers for uploads and decisions.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataOf, startSubgraph, type Harness, type Principal } from '../../../test/src/subgraph-harness.js';
import { createCatalogSubgraph, DirectoryPackageStore, type CatalogOptions } from '../src/index.js';

export interface CatalogHarness {
  h: Harness;
  base: string;
  clock: { offsetMs: number; now(): Date };
  catalog: ReturnType<typeof createCatalogSubgraph>;
  storageDir: string;
  upload(
    p: Principal | null,
    plugin: string,
    version: string,
    body: Buffer,
  ): Promise<{ status: number; json: any }>;
  createPlugin(p: Principal, name: string): Promise<string>;
  /** Uploads and runs the analysis; returns the release id. */
  uploadAnalysed(p: Principal, plugin: string, version: string, body: Buffer): Promise<string>;
  release(p: Principal, id: string): Promise<any>;
  mutate(p: Principal, field: string, args: Record<string, unknown>): Promise<any>;
  close(): Promise<void>;
}

export const RELEASE_FIELDS = `id version state stateReason channel targetPath
  package { sizeBytes sha256 sha512 uploadedBy { id } }
  analysis { state verdict reason findings(first: 100) { edges { node { rule path message } } } attempts envelope keyId }
  decisions(first: 50) { edges { node { action actor { id } reason channel } } }`;

export async function startCatalog(opts: CatalogOptions = {}): Promise<CatalogHarness> {
  const storageDir = await mkdtemp(join(tmpdir(), 'catalog-test-'));
  const clock = {
    offsetMs: 0,
    now() {
      return new Date(Date.now() + this.offsetMs);
    },
  };
  const catalog = createCatalogSubgraph({
    now: () => clock.now(),
    store: new DirectoryPackageStore(storageDir),
    pollIntervalMs: 0,
    analyseOnUpload: false,
    ...opts,
  });
  const h = await startSubgraph(catalog);
  const base = h.url.replace(/\/graphql$/, '');

  const upload = async (p: Principal | null, plugin: string, version: string, body: Buffer) => {
    const res = await fetch(`${base}/packages?plugin=${plugin}&version=${version}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/zip',
        ...(p ? { authorization: `Bearer ${await h.token(p)}` } : {}),
      },
      body: new Uint8Array(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };
  const mutate = async (p: Principal, field: string, args: Record<string, unknown>) => {
    const decl = Object.keys(args)
      .map((k) => `$${k}: ${k === 'role' ? 'TufRole!' : k === 'reason' ? 'String!' : 'ID!'}`)
      .join(', ');
    const pass = Object.keys(args)
      .map((k) => `${k}: $${k}`)
      .join(', ');
    const selection = field === 'rotateTufKey' ? 'role rootVersion' : `release { ${RELEASE_FIELDS} }`;
    return h.gql(
      p,
      `mutation (${decl}, $key: ID!) { ${field}(${pass}, idempotencyKey: $key) { ${selection} } }`,
      {
        ...args,
        key: randomUUID(),
      },
    );
  };
  return {
    h,
    base,
    clock,
    catalog,
    storageDir,
    upload,
    mutate,
    async createPlugin(p, name) {
      const r = await h.gql(
        p,
        `mutation ($name: String!, $key: ID!) { createPlugin(input: { name: $name, displayName: "P" }, idempotencyKey: $key) { plugin { id } } }`,
        { name, key: randomUUID() },
      );
      return dataOf(r).createPlugin.plugin.id as string;
    },
    async uploadAnalysed(p, plugin, version, body) {
      const r = await upload(p, plugin, version, body);
      if (r.status !== 202) throw new Error(`upload failed: ${r.status} ${JSON.stringify(r.json)}`);
      await catalog.analysis().drain();
      return r.json.releaseId as string;
    },
    async release(p, id) {
      const r = await h.gql(p, `query ($id: ID!) { release(id: $id) { ${RELEASE_FIELDS} } }`, { id });
      const release = dataOf(r).release;
      // Findings as a plain array, for readable assertions.
      if (release?.analysis) {
        release.analysis.findings = release.analysis.findings.edges.map((e: { node: unknown }) => e.node);
      }
      return release;
    },
    async close() {
      await h.close();
      await rm(storageDir, { recursive: true, force: true });
    },
  };
}
