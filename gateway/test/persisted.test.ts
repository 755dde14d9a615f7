/**
 * Persisted operations at the gateway (persisted.ts): APQ (Apollo protocol v1) and trusted documents, over real HTTP
 * against the stub subgraphs of harness.ts, for /graphql and /graphql/stream; the manifest loader; the config.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, createLogger, loadConfig } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPersistedDocuments,
  DocumentCache,
  ManifestError,
  parseOperationsManifest,
  PersistedDocuments,
  sha256Hex,
  type OperationsManifest,
} from '../src/persisted.js';
import { startHarness, type Harness } from './harness.js';

const THINGS = 'query Things { things(first: 2) { id name } }';
const TOUCH =
  'mutation Touch($key: ID!, $label: String!) { touch(idempotencyKey: $key, label: $label) { id name } }';
const TICKS = 'subscription Ticks($from: Int) { ticks(from: $from) { n } }';
const THINGS_DATA = {
  things: [
    { id: 't1', name: 'thing 1' },
    { id: 't2', name: 'thing 2' },
  ],
};

function manifestOf(
  docs: Array<[string, 'query' | 'mutation' | 'subscription', string]>,
): OperationsManifest {
  return {
    version: 1,
    schemaVersion: '0123456789ab',
    operations: docs.map(([name, kind, document]) => ({ name, kind, sha256: sha256Hex(document), document })),
  };
}
const MANIFEST = manifestOf([
  ['Things', 'query', THINGS],
  ['Ticks', 'subscription', TICKS],
  ['Touch', 'mutation', TOUCH],
]);

const dir = mkdtempSync(join(tmpdir(), 'agentgraph-persisted-'));
const manifestFile = join(dir, 'operations.manifest.json');
writeFileSync(manifestFile, JSON.stringify(MANIFEST, null, 2));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pq = (document: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256Hex(document) } });

/** GET /graphql with the given search parameters (a non-simple header passes Apollo's CSRF check). */
async function get(h: Harness, params: Record<string, unknown>, token?: string) {
  const search = new URLSearchParams(
    Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
  const res = await fetch(`${h.url}/graphql?${search}`, {
    headers: { 'apollo-require-preflight': 'true', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

/** Opens /graphql/stream (POST, or GET with `params` in the URL); answers the refusal or the raw SSE response. */
async function openStream(h: Harness, token: string, body: Record<string, unknown>, method = 'POST') {
  const controller = new AbortController();
  const search =
    method === 'GET'
      ? `?${new URLSearchParams(Object.entries(body).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))}`
      : '';
  const res = await fetch(`${h.url}/graphql/stream${search}`, {
    method,
    signal: controller.signal,
    headers: {
      ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
    },
    ...(method === 'POST' ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.headers.get('content-type')?.includes('text/event-stream')) {
    return {
      status: res.status,
      headers: res.headers,
      json: (await res.json()) as any,
      until: async (needle: string): Promise<void> => {
        throw new Error(`refused with HTTP ${res.status}, no stream to read ${needle} from`);
      },
      close: async () => {},
    };
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  return {
    status: res.status,
    headers: res.headers,
    json: undefined as any,
    /** Reads until an event with `data` containing `needle` arrived. */
    async until(needle: string) {
      while (!text.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}; got ${JSON.stringify(text)}`);
        text += decoder.decode(value, { stream: true });
      }
    },
    async close() {
      controller.abort();
      await reader.cancel().catch(() => undefined);
    },
  };
}

/** Waits (by yielding to the event loop, not by time) until a condition holds. */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

describe('APQ (PERSISTED_QUERIES=apq, the default)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ TRUSTED_DOCUMENTS_FILE: manifestFile });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers an unknown hash with PERSISTED_QUERY_NOT_FOUND, HTTP 200, uncacheable, asking no subgraph', async () => {
    const before = h.seen.alphaRequests;
    const r = await h.post({ extensions: pq('{ things(first: 1) { id } }') });
    expect(r.status).toBe(200);
    expect(r.json.data).toBeUndefined();
    expect(r.json.errors).toHaveLength(1);
    expect(r.json.errors[0]).toMatchObject({
      message: 'PersistedQueryNotFound',
      extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
    });
    expect(r.headers.get('cache-control')).toBe('private, no-cache, must-revalidate');
    expect(h.seen.alphaRequests).toBe(before);
  });

  it('registers a document sent with its hash, then runs it from the hash alone', async () => {
    const doc = '{ things(first: 3) { id name detail } }';
    const miss = await h.post({ extensions: pq(doc) });
    expect(miss.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const full = await h.post({ query: doc, extensions: pq(doc) });
    expect(full.status).toBe(200);
    expect(full.json.data.things).toHaveLength(3);
    const hit = await h.post({ extensions: pq(doc) });
    expect(hit.status).toBe(200);
    expect(hit.json).toEqual(full.json);
    // Other extensions still reach the request; an upper-case hash is the same hash.
    const upper = await h.post({
      extensions: { other: true, persistedQuery: { version: 1, sha256Hash: sha256Hex(doc).toUpperCase() } },
    });
    expect(upper.json).toEqual(full.json);
  });

  it('refuses a hash that does not match the query (400) and remembers nothing', async () => {
    const doc = '{ things(first: 1) { name } }';
    const r = await h.post({ query: doc, extensions: pq('{ something { else } }') });
    expect(r.status).toBe(400);
    expect(r.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(r.json.errors[0].message).toMatch(/^provided sha does not match query/);
    const later = await h.post({ extensions: pq('{ something { else } }') });
    expect(later.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('remembers only documents that validate', async () => {
    const bad = '{ things { nope } }';
    const r = await h.post({ query: bad, extensions: pq(bad) });
    expect(r.status).toBe(200); // a document error, and the client accepts only application/json
    expect(r.json.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const later = await h.post({ extensions: pq(bad) });
    expect(later.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('refuses a malformed extension or another protocol version with BAD_USER_INPUT', async () => {
    const version = await h.post({
      extensions: { persistedQuery: { version: 2, sha256Hash: sha256Hex(THINGS) } },
    });
    expect(version.status).toBe(400);
    expect(version.json.errors[0].message).toContain('version 1');
    const short = await h.post({ extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } });
    expect(short.status).toBe(400);
    expect(short.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const shape = await h.post({ extensions: { persistedQuery: 'x' } });
    expect(shape.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const none = await h.post({ variables: {} });
    expect(none.status).toBe(400);
    expect(none.json.errors[0].message).toContain('"query"');
  });

  it('finds the manifest documents by hash without a registration', async () => {
    const r = await h.post({ extensions: pq(THINGS) });
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual(THINGS_DATA);
  });

  it('serves queries by hash over GET (miss, registration, hit)', async () => {
    const doc = '{ things(first: 2) { id } }';
    const miss = await get(h, { extensions: pq(doc) });
    expect(miss.status).toBe(200);
    expect(miss.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(miss.headers.get('cache-control')).toBe('private, no-cache, must-revalidate');
    const full = await get(h, { query: doc, extensions: pq(doc) });
    expect(full.status).toBe(200);
    expect(full.json.data.things).toEqual([{ id: 't1' }, { id: 't2' }]);
    const hit = await get(h, { extensions: pq(doc) });
    expect(hit.json).toEqual(full.json);
    const manifest = await get(h, { extensions: pq(THINGS), operationName: 'Things' });
    expect(manifest.json.data).toEqual(THINGS_DATA);
  });

  it('never runs a mutation over GET, even by hash; POST runs it by hash', async () => {
    const token = await h.token();
    const touches = h.seen.touches.size;
    const variables = { key: 'apq-get-1', label: 'by hash' };
    const viaGet = await get(h, { extensions: pq(TOUCH), variables }, token);
    expect(viaGet.status).toBe(405);
    expect(viaGet.json.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(h.seen.touches.size).toBe(touches);
    const viaPost = await h.post({ extensions: pq(TOUCH), variables }, { authorization: `Bearer ${token}` });
    expect(viaPost.status).toBe(200);
    expect(viaPost.json.data.touch.name).toBe('by hash');
    expect(h.seen.touches.size).toBe(touches + 1);
  });

  it('keeps the fast paths: identical in-flight reads by hash share one subgraph fetch', async () => {
    const doc = 'query Slow { slow }';
    // Registering the document runs Query.slow once: let it through instead of waiting for a timeout.
    h.slow.release();
    await h.post({ query: doc, extensions: pq(doc) }).then(() => undefined);
    const gate = h.newGate();
    const token = await h.token();
    const calls = h.seen.slowCalls;
    const shared = h.gateway.stats.sharedFetches;
    const auth = { authorization: `Bearer ${token}` };
    const pending = [
      h.post({ extensions: pq(doc) }, auth),
      h.post({ extensions: pq(doc) }, auth),
      h.post({ query: doc }, auth),
    ];
    await gate.entered;
    await until(() => h.gateway.stats.sharedFetches === shared + 2);
    gate.release();
    const answers = await Promise.all(pending);
    expect(answers.map((a) => a.json.data)).toEqual([
      { slow: 'finally' },
      { slow: 'finally' },
      { slow: 'finally' },
    ]);
    expect(h.seen.slowCalls).toBe(calls + 1);
  });

  it('logs the operation name of a request sent by hash', async () => {
    const marker = `apq-log-${Date.now()}`;
    await h.post({ extensions: pq(THINGS) }, { 'x-correlation-id': marker });
    const line = h.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['correlationId'] === marker && l['msg'] === 'request');
    expect(line).toMatchObject({ path: '/graphql', operationName: 'Things', status: 200 });
  });

  it('streams: registers a subscription sent with its hash, then opens it from the hash (POST and GET)', async () => {
    const token = await h.token();
    const doc = 'subscription Mine { ticks(from: 1) { n } }';
    const miss = await openStream(h, token, { extensions: pq(doc) });
    expect(miss.json.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(h.ticks.active).toBe(0);

    const first = await openStream(h, token, { query: doc, extensions: pq(doc) });
    expect(first.status).toBe(200);
    await first.until('"n":1');
    await first.close();
    await h.ticks.activeBecomes(0);

    for (const method of ['POST', 'GET']) {
      const again = await openStream(h, token, { extensions: pq(doc) }, method);
      expect(again.status, method).toBe(200);
      await again.until('"n":1');
      await again.close();
      await h.ticks.activeBecomes(0);
    }
    const mismatch = await openStream(h, token, { query: doc, extensions: pq(TICKS) });
    expect(mismatch.status).toBe(400);
    expect(mismatch.json.errors[0].message).toMatch(/^provided sha does not match query/);
  });
});

describe('trusted documents (PERSISTED_QUERIES=trusted)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ PERSISTED_QUERIES: 'trusted', TRUSTED_DOCUMENTS_FILE: manifestFile });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('runs a manifest operation sent in full or by hash (POST and GET)', async () => {
    const full = await h.post({ query: THINGS });
    expect(full.status).toBe(200);
    expect(full.json.data).toEqual(THINGS_DATA);
    const byHash = await h.post({ extensions: pq(THINGS) });
    expect(byHash.json).toEqual(full.json);
    const both = await h.post({ query: THINGS, extensions: pq(THINGS) });
    expect(both.json).toEqual(full.json);
    const viaGet = await get(h, { extensions: pq(THINGS) });
    expect(viaGet.json).toEqual(full.json);
    const token = await h.token();
    const touch = await h.post(
      { query: TOUCH, variables: { key: 'trusted-1', label: 'trusted' } },
      { authorization: `Bearer ${token}` },
    );
    expect(touch.json.data.touch.name).toBe('trusted');
  });

  it('refuses any other document, naming it and saying what to do, and asks no subgraph', async () => {
    const before = h.seen.alphaRequests;
    const other = 'query Sneaky { things(first: 1) { id } }';
    const r = await h.post({ query: other });
    expect(r.status).toBe(400);
    expect(r.json.errors).toHaveLength(1);
    const [error] = r.json.errors;
    expect(error.extensions).toMatchObject({ code: 'OPERATION_NOT_TRUSTED', operationName: 'Sneaky' });
    expect(error.message).toContain('"Sneaky"');
    expect(error.message).toContain('npm run codegen');
    expect(error.message).toContain('schemas/operations/');
    // The same document with a matching hash is not registered either, and a hash alone is not "not found".
    const registered = await h.post({ query: other, extensions: pq(other) });
    expect(registered.json.errors[0].extensions.code).toBe('OPERATION_NOT_TRUSTED');
    const byHash = await h.post({ extensions: pq(other), operationName: 'Sneaky' });
    expect(byHash.status).toBe(400);
    expect(byHash.json.errors[0].extensions).toMatchObject({
      code: 'OPERATION_NOT_TRUSTED',
      operationName: 'Sneaky',
      sha256Hash: sha256Hex(other),
    });
    const anonymous = await get(h, { query: '{ things(first: 1) { id } }' });
    expect(anonymous.status).toBe(400);
    expect(anonymous.json.errors[0].message).toContain('anonymous operation');
    // A trusted document with a byte changed is another document.
    const edited = await h.post({ query: `${THINGS} ` });
    expect(edited.json.errors[0].extensions.code).toBe('OPERATION_NOT_TRUSTED');
    expect(h.seen.alphaRequests).toBe(before);
  });

  it('runs on a stream GET exactly the document it checked (a raw "?" cannot split the URL differently)', async () => {
    const token = await h.token();
    const other = encodeURIComponent('subscription Other { ticks { n } }');
    const trusted = encodeURIComponent(TICKS);
    const get = (search: string) =>
      fetch(`${h.url}/graphql/stream?${search}`, {
        headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` },
      });
    // graphql-sse alone would read extensions "{}" (up to the second "?") and run the untrusted query.
    const cut = await get(`query=${other}&extensions={}?x`);
    expect(cut.status).toBe(400);
    expect(((await cut.json()) as any).errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    // Checked: the trusted text with a raw "?" after it, which is another document (refused), never a prefix.
    const suffixed = await get(`query=${trusted}?&variables={"from":1}`);
    expect(suffixed.status).toBe(400);
    expect(((await suffixed.json()) as any).errors[0].extensions.code).toBe('OPERATION_NOT_TRUSTED');
    expect(h.ticks.active).toBe(0);
  });

  it('refuses a trusted hash sent with another document (400)', async () => {
    const r = await h.post({ query: '{ things { id } }', extensions: pq(THINGS) });
    expect(r.status).toBe(400);
    expect(r.json.errors[0].message).toMatch(/^provided sha does not match query/);
  });

  it('applies to /graphql/stream: a manifest subscription streams, any other is refused before the subgraph', async () => {
    const token = await h.token();
    for (const body of [
      { query: TICKS, variables: { from: 1 } },
      { extensions: pq(TICKS), variables: { from: 1 } },
    ]) {
      const ok = await openStream(h, token, body);
      expect(ok.status).toBe(200);
      await ok.until('"n":1');
      await ok.close();
      await h.ticks.activeBecomes(0);
    }
    const viaGet = await openStream(h, token, { extensions: pq(TICKS), variables: { from: 1 } }, 'GET');
    expect(viaGet.status).toBe(200);
    await viaGet.until('"n":1');
    await viaGet.close();
    await h.ticks.activeBecomes(0);

    const other = 'subscription Other { ticks { n } }';
    for (const [body, method] of [
      [{ query: other }, 'POST'],
      [{ query: other }, 'GET'],
      [{ extensions: pq(other) }, 'POST'],
    ] as const) {
      const refused = await openStream(h, token, body, method);
      expect(refused.status, `${method} ${JSON.stringify(body)}`).toBe(400);
      expect(refused.json.errors[0].extensions.code).toBe('OPERATION_NOT_TRUSTED');
      expect(h.ticks.active).toBe(0);
    }
  });
});

describe('the operations manifest', () => {
  const text = JSON.stringify(MANIFEST);

  it('parses a version 1 manifest', () => {
    expect(parseOperationsManifest(text, 'm.json').operations.map((o) => o.name)).toEqual([
      'Things',
      'Ticks',
      'Touch',
    ]);
  });

  it('names the file and says how to regenerate it when it is missing or wrong', () => {
    const missing = join(dir, 'nope.json');
    expect(() =>
      createPersistedDocuments({ mode: 'trusted', manifestFile: missing, cacheBytes: 1000 }),
    ).toThrow(ManifestError);
    expect(() =>
      createPersistedDocuments({ mode: 'trusted', manifestFile: missing, cacheBytes: 1000 }),
    ).toThrow(new RegExp(`${missing}.*ENOENT.*npm run codegen`, 's'));
    // A ManifestError is a configuration error: the launchers print it and exit 1.
    expect(new ManifestError('x')).toBeInstanceOf(ConfigError);
    // In apq mode a missing manifest only means no documents by default.
    expect(
      createPersistedDocuments({ mode: 'apq', manifestFile: missing, cacheBytes: 1000 }).trustedCount,
    ).toBe(0);

    const cases: Array<[string, RegExp]> = [
      ['{not json', /not valid JSON/],
      [JSON.stringify({ ...MANIFEST, version: 2 }), /version: .*\n.*npm run codegen/s],
      [
        JSON.stringify({ ...MANIFEST, operations: [{ ...MANIFEST.operations[0], sha256: 'f'.repeat(64) }] }),
        /operations\.0 \(Things\) has a sha256 that is not the SHA-256 of its document/,
      ],
      [
        JSON.stringify({ ...MANIFEST, operations: [MANIFEST.operations[0], MANIFEST.operations[0]] }),
        /operations\.1 \(Things\) repeats the name/,
      ],
      [JSON.stringify({ ...MANIFEST, operations: [{ name: 'X', kind: 'query' }] }), /operations\.0\.sha256/],
    ];
    for (const [content, pattern] of cases) {
      const file = join(dir, 'bad.json');
      writeFileSync(file, content);
      let thrown: unknown;
      try {
        createPersistedDocuments({ mode: 'trusted', manifestFile: file, cacheBytes: 1000 });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, content).toBeInstanceOf(ManifestError);
      expect((thrown as Error).message).toContain(file);
      expect((thrown as Error).message).toMatch(pattern);
      // apq runs without it (registrations still work) and says why in the log.
      const lines: string[] = [];
      const log = createLogger({ service: 't' }, { level: 'info', write: (l) => lines.push(l) });
      const apq = createPersistedDocuments({ mode: 'apq', manifestFile: file, cacheBytes: 1000 }, log);
      expect(apq.trustedCount).toBe(0);
      const logged = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l['level'] === 'error');
      expect(logged?.['msg']).toBe('operations manifest ignored');
      expect(String(logged?.['error'])).toContain(file);
    }
  });

  it('is ignored when persisted operations are off', () => {
    const off = createPersistedDocuments({
      mode: 'off',
      manifestFile: join(dir, 'nope.json'),
      cacheBytes: 1000,
    });
    expect(off.trustedCount).toBe(0);
  });
});

describe('PersistedDocuments', () => {
  const req = (query: string | undefined, extensions?: unknown) => ({
    query,
    extensions,
    operationName: undefined,
  });

  it('off: ignores the extension when the query is there, never finds a hash alone, remembers nothing', () => {
    const p = new PersistedDocuments({ mode: 'off', manifest: MANIFEST });
    expect(p.resolve(req('{ a }', pq('{ b }')))).toEqual({ query: '{ a }', persisted: true });
    expect(() => p.resolve(req(undefined, pq(THINGS)))).toThrow(
      expect.objectContaining({ code: 'PERSISTED_QUERY_NOT_FOUND' }),
    );
    p.remember(sha256Hex('{ a }'), '{ a }');
    expect(p.cache.size).toBe(0);
  });

  it('apq: asks for registration only for a new pair, and remembers only matching pairs', () => {
    const p = new PersistedDocuments({ mode: 'apq', manifest: null });
    const doc = '{ a }';
    expect(p.resolve(req(doc, pq(doc)))).toEqual({ query: doc, persisted: true, register: sha256Hex(doc) });
    p.remember(sha256Hex('{ other }'), doc);
    expect(p.cache.size).toBe(0);
    p.remember(sha256Hex(doc), doc);
    expect(p.resolve(req(doc, pq(doc)))).toEqual({ query: doc, persisted: true });
    expect(p.resolve(req(undefined, pq(doc)))).toEqual({ query: doc, persisted: true });
    expect(p.resolve(req(doc))).toEqual({ query: doc, persisted: false });
  });

  it('the APQ cache is bounded by bytes and by count, least recently used first out', () => {
    const cache = new DocumentCache(10, 3);
    cache.set('a', '1234');
    cache.set('b', '1234');
    expect(cache.get('a')).toBe('1234'); // a is now the most recent
    cache.set('c', '1234'); // 12 bytes > 10: b goes
    expect([cache.peek('a'), cache.peek('b'), cache.peek('c')]).toEqual(['1234', undefined, '1234']);
    expect(cache.bytes).toBe(8);
    cache.set('big', 'x'.repeat(11)); // larger than the whole budget: not kept
    expect(cache.peek('big')).toBeUndefined();
    cache.set('d', '1');
    cache.set('e', '1'); // 4 entries > 3: a (least recent) goes
    expect(cache.size).toBe(3);
    expect(cache.peek('a')).toBeUndefined();
    cache.set('c', 'é'); // replacing counts the new size (2 bytes in UTF-8)
    expect(cache.bytes).toBe(4);
  });

  it('trusted: needs a manifest', () => {
    expect(() => new PersistedDocuments({ mode: 'trusted', manifest: null })).toThrow(ManifestError);
  });
});

describe('configuration', () => {
  it('defaults to apq with the repository manifest; trusted and a file are opt-in', () => {
    const c = loadConfig({ DATA_DIR: 'memory://' });
    expect(c.persistedQueries.mode).toBe('apq');
    expect(c.persistedQueries.manifestFile).toMatch(/\/schemas\/operations\.manifest\.json$/);
    expect(c.persistedQueries.cacheBytes).toBe(16 * 1024 * 1024);
    const prod = loadConfig({
      DATA_DIR: 'memory://',
      AGENTGRAPH_MODE: 'production',
      CURSOR_SECRET: 'x'.repeat(32),
      COOKIE_SECRET: 'y'.repeat(32),
      GATEWAY_SECRET: 'z'.repeat(32),
      KEY_ENCRYPTION_KEYS: Buffer.alloc(32, 7).toString('base64'),
      DATABASE_URL: 'postgres://u@127.0.0.1/db',
    });
    expect(prod.persistedQueries.mode).toBe('apq');
    const t = loadConfig({
      DATA_DIR: 'memory://',
      PERSISTED_QUERIES: 'trusted',
      TRUSTED_DOCUMENTS_FILE: 'ops/manifest.json',
      PERSISTED_QUERIES_CACHE_BYTES: '1024',
    });
    expect(t.persistedQueries).toEqual({
      mode: 'trusted',
      manifestFile: join(process.cwd(), 'ops/manifest.json'),
      cacheBytes: 1024,
    });
    expect(() => loadConfig({ DATA_DIR: 'memory://', PERSISTED_QUERIES: 'safelist' })).toThrow(
      /PERSISTED_QUERIES/,
    );
  });
});
