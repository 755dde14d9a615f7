/**
 * putMemories over real HTTP on a real database (PGlite, or PostgreSQL with DATABASE_URL): up to 100 records in one
 * transaction under one idempotency key, each written as putMemory would write it, with per-item errors (the good
 * records written, a refused one leaving nothing behind), replay, limits, concurrency with putMemory and with other
 * batches on the same ids, device authorship and tenant isolation.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memorySubgraph } from '../src/index.js';
import {
  codeOf,
  dataOf,
  newPrincipal,
  startSubgraph,
  type Harness,
  type Principal,
} from '../../../test/src/subgraph-harness.js';

const MAX_PAYLOAD = 4096;
const MAX_BODY = 256 * 1024;

let h: Harness;
beforeAll(async () => {
  h = await startSubgraph(memorySubgraph, {
    MAX_PAYLOAD_BYTES: String(MAX_PAYLOAD),
    MAX_BODY_BYTES: String(MAX_BODY),
  });
});
afterAll(async () => {
  await h?.close();
});

const PUT_MANY = `mutation ($input: PutMemoriesInput!, $key: ID!) {
  putMemories(input: $input, idempotencyKey: $key) {
    written failed
    edges {
      index id created
      node { id version kind content tags author { id } workspace { id embeddingDimensions } }
      error { code message field currentVersion extensions }
    }
  }
}`;

const PUT_ONE = `mutation ($id: ID!, $input: PutMemoryInput!, $expectedVersion: Int, $key: ID!) {
  putMemory(id: $id, input: $input, expectedVersion: $expectedVersion, idempotencyKey: $key) { record { version } }
}`;

const READ = `query ($id: ID!) { memoryRecord(id: $id) { id version content author { id } } }`;

interface Edge {
  index: number;
  id: string;
  created: boolean | null;
  node: { id: string; version: number; content: string; tags: string[]; workspace: any } | null;
  error: {
    code: string;
    message: string;
    field: string | null;
    currentVersion: number | null;
    extensions: string;
  } | null;
}
interface Payload {
  written: number;
  failed: number;
  edges: Edge[];
}

type Rec = Record<string, unknown>;

async function createWorkspace(p: Principal, extra: Rec = {}): Promise<string> {
  const r = await h.gql(
    p,
    `mutation ($input: CreateWorkspaceInput!, $key: ID!) { createWorkspace(input: $input, idempotencyKey: $key) { workspace { id } } }`,
    { input: { name: 'batch', ...extra }, key: randomUUID() },
  );
  return dataOf(r).createWorkspace.workspace.id as string;
}

const rec = (workspaceId: string, o: Rec = {}): Rec => ({
  id: randomUUID(),
  workspaceId,
  kind: 'note',
  content: 'hello',
  ...o,
});

function putMany(p: Principal, records: Rec[], key: string = randomUUID()) {
  return h.gql(p, PUT_MANY, { input: { records }, key });
}

async function putManyOk(p: Principal, records: Rec[], key?: string): Promise<Payload> {
  return dataOf(await putMany(p, records, key)).putMemories as Payload;
}

async function read(p: Principal, id: string) {
  return dataOf(await h.gql(p, READ, { id })).memoryRecord as {
    version: number;
    content: string;
    author: { id: string };
  } | null;
}

async function jobsOf(p: Principal): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    const r: any = dataOf(
      await h.gql(
        p,
        `query ($after: String) { memoryJobs(first: 100, after: $after) { edges { node { recordId } } pageInfo { hasNextPage endCursor } } }`,
        { after },
      ),
    ).memoryJobs;
    ids.push(...r.edges.map((e: any) => e.node.recordId));
    if (!r.pageInfo.hasNextPage) return ids;
    after = r.pageInfo.endCursor;
  }
}

describe('putMemories', () => {
  it('writes 100 records in input order, each as putMemory would (version, author, one indexing job each)', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const records = Array.from({ length: 100 }, (_, i) =>
      rec(ws, { content: `record ${i}`, tags: [`t${i % 3}`] }),
    );
    const out = await putManyOk(p, records);
    expect(out).toMatchObject({ written: 100, failed: 0 });
    expect(out.edges.map((e) => e.index)).toEqual(records.map((_, i) => i));
    expect(out.edges.map((e) => e.id)).toEqual(records.map((r) => r['id']));
    for (const [i, e] of out.edges.entries()) {
      expect(e.error).toBeNull();
      expect(e.created).toBe(true);
      expect(e.node).toMatchObject({ id: records[i]!['id'], version: 1, content: `record ${i}` });
    }
    const again = await putManyOk(
      p,
      records.slice(0, 2).map((r) => ({ ...r, content: 'second' })),
    );
    expect(again.edges.map((e) => [e.created, e.node?.version])).toEqual([
      [false, 2],
      [false, 2],
    ]);
    expect(await read(p, records[0]!['id'] as string)).toMatchObject({
      version: 2,
      content: 'second',
      author: { id: p.userId },
    });
    expect(await read(p, records[99]!['id'] as string)).toMatchObject({ version: 1, content: 'record 99' });
    // One job per record write (the worker may have run some already; a rewrite of an indexed record queues again).
    const jobs = await jobsOf(p);
    const perRecord = new Map<string, number>();
    for (const id of jobs) perRecord.set(id, (perRecord.get(id) ?? 0) + 1);
    expect(perRecord.size).toBe(100);
    for (const r of records.slice(2)) expect(perRecord.get(r['id'] as string)).toBe(1);
  });

  it('stores a record created in bulk exactly as putMemory stores it (fields, embedding and its norm, expiry)', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p, { embeddingDimensions: 3 });
    const fields = {
      workspaceId: ws,
      kind: 'fact.v1',
      content: 'the same content',
      tags: ['x', 'y'],
      metadata: '{"source":"chat","n":[1,2,{"deep":true}]}',
      embedding: [0.1234567891, -2.5, 3e-8],
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    };
    const single = randomUUID();
    dataOf(await h.gql(p, PUT_ONE, { id: single, input: fields, key: randomUUID() }));
    const bulk = randomUUID();
    expect((await putManyOk(p, [{ id: bulk, ...fields }])).edges[0]!.created).toBe(true);
    const FULL = `query ($id: ID!) { memoryRecord(id: $id) {
      kind content tags metadata embedding expiresAt version author { id } workspace { id } } }`;
    const a = dataOf(await h.gql(p, FULL, { id: single })).memoryRecord;
    const b = dataOf(await h.gql(p, FULL, { id: bulk })).memoryRecord;
    expect(b).toEqual(a);
    // The stored norm: an embedding search scores both alike (cosine divides by it).
    const found = dataOf(
      await h.gql(
        p,
        `query ($ws: ID!, $e: [Float!]) { searchMemory(workspaceId: $ws, query: { embedding: $e }) { edges { vectorScore node { id } } } }`,
        { ws, e: [1, 1, 1] },
      ),
    ).searchMemory.edges as { vectorScore: number; node: { id: string } }[];
    expect(found.map((e) => e.node.id).sort()).toEqual([single, bulk].sort());
    expect(found[0]!.vectorScore).toBe(found[1]!.vectorScore);
  });

  it('writes an id given twice twice, in order (the second sees the first)', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();
    const out = await putManyOk(p, [
      rec(ws, { id, content: 'a', expectedVersion: 0 }),
      rec(ws, { id, content: 'b', expectedVersion: 1 }),
      rec(ws, { id, content: 'c', expectedVersion: 1 }),
    ]);
    expect(out.edges.map((e) => e.node?.version ?? e.error?.code)).toEqual([1, 2, 'VERSION_CONFLICT']);
    expect(out.edges[2]!.error).toMatchObject({ currentVersion: 2, field: null });
    expect(await read(p, id)).toMatchObject({ version: 2, content: 'b' });
  });

  it('answers each refused record with its error and field, writes nothing for it, and writes the rest', async () => {
    const tenant = randomUUID();
    const p = newPrincipal('OWNER', tenant);
    const ws = await createWorkspace(p);
    const other = await createWorkspace(p);
    const existing = randomUUID();
    dataOf(
      await h.gql(p, PUT_ONE, {
        id: existing,
        input: { workspaceId: ws, kind: 'note', content: 'v1' },
        key: randomUUID(),
      }),
    );
    const elsewhere = randomUUID();
    dataOf(
      await h.gql(p, PUT_ONE, {
        id: elsewhere,
        input: { workspaceId: other, kind: 'note', content: 'there' },
        key: randomUUID(),
      }),
    );
    const secret = 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
    const records = [
      rec(ws, { content: 'good 0' }),
      rec(ws, { kind: 'Not A Kind' }),
      rec(ws, { id: existing, expectedVersion: 7, content: 'stale' }),
      rec(ws, { content: `the token is ${secret}` }),
      rec(ws, { content: 'x'.repeat(MAX_PAYLOAD + 1) }),
      rec(randomUUID()),
      rec(ws, { id: elsewhere }),
      rec(ws, { expiresAt: new Date(Date.now() - 60_000).toISOString() }),
      rec(ws, { id: 'not-a-uuid' }),
      rec(ws, { metadata: '[1]' }),
      rec(ws, { tags: ['ok', ''] }),
      rec(ws, { content: 'good 11' }),
    ];
    const out = await putManyOk(p, records);
    expect(out).toMatchObject({ written: 2, failed: 10 });
    const errors = out.edges.map((e) => e.error && [e.error.code, e.error.field]);
    expect(errors).toEqual([
      null,
      ['BAD_USER_INPUT', 'input.records[1].kind'],
      ['VERSION_CONFLICT', null],
      ['BAD_USER_INPUT', 'input.records[3].content'],
      ['PAYLOAD_TOO_LARGE', 'input.records[4].content'],
      ['NOT_FOUND', 'input.records[5].workspaceId'],
      ['BAD_USER_INPUT', 'input.records[6].id'],
      ['BAD_USER_INPUT', 'input.records[7].expiresAt'],
      ['BAD_USER_INPUT', 'input.records[8].id'],
      ['BAD_USER_INPUT', 'input.records[9].metadata'],
      ['BAD_USER_INPUT', 'input.records[10].tags.1'],
      null,
    ]);
    expect(out.edges[2]!.error!.currentVersion).toBe(1);
    expect(JSON.parse(out.edges[3]!.error!.extensions)).toEqual({
      field: 'input.records[3].content',
      detector: 'github-token',
    });
    expect(JSON.parse(out.edges[4]!.error!.extensions)).toMatchObject({ maxBytes: MAX_PAYLOAD });
    expect(out.edges[8]!.id).toBe('not-a-uuid');
    // Never the value: neither the secret nor the content appears in an answer.
    expect(JSON.stringify(out)).not.toContain(secret);
    // The refused ones wrote nothing; the good ones are there.
    expect(await read(p, existing)).toMatchObject({ version: 1, content: 'v1' });
    expect(await read(p, elsewhere)).toMatchObject({ version: 1, content: 'there' });
    for (const i of [1, 3, 4, 5, 7, 9, 10]) expect(await read(p, records[i]!['id'] as string)).toBeNull();
    expect(await read(p, records[0]!['id'] as string)).toMatchObject({ content: 'good 0' });
    expect(await read(p, records[11]!['id'] as string)).toMatchObject({ content: 'good 11' });
  });

  it('rolls back what a refused record did before it failed (the workspace dimension it fixed)', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const out = await putManyOk(p, [
      // Fixes the dimension at 3, then is refused (it does not exist at version 5): the dimension goes with it.
      rec(ws, { embedding: [1, 2, 3], expectedVersion: 5 }),
      rec(ws, { embedding: [1, 0, 0, 1] }),
      rec(ws, { embedding: [1, 2, 3] }),
    ]);
    expect(out.edges.map((e) => e.error?.code ?? 'ok')).toEqual(['VERSION_CONFLICT', 'ok', 'BAD_USER_INPUT']);
    expect(out.edges[2]!.error!.field).toBe('input.records[2].embedding');
    expect(JSON.parse(out.edges[2]!.error!.extensions)).toMatchObject({ expected: 4, got: 3 });
    const w = dataOf(
      await h.gql(p, `query ($id: ID!) { workspace(id: $id) { embeddingDimensions } }`, { id: ws }),
    );
    expect(w.workspace.embeddingDimensions).toBe(4);
  });

  it('redacts per record in a REDACT workspace', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p, { secretPolicy: 'REDACT' });
    const out = await putManyOk(p, [
      rec(ws, { content: 'card 4111 1111 1111 1111 here' }),
      rec(ws, { content: 'plain' }),
    ]);
    expect(out.written).toBe(2);
    expect(out.edges[0]!.node!.content).toMatch(/^card \[REDACTED:[a-z-]+\] here$/);
    expect(out.edges[1]!.node!.content).toBe('plain');
  });

  it('refuses another device’s record (FORBIDDEN) and writes the device’s own', async () => {
    const tenant = randomUUID();
    const person = newPrincipal('OWNER', tenant);
    const deviceA = { ...newPrincipal('OPERATOR', tenant), deviceId: randomUUID() };
    const deviceB = { ...newPrincipal('OPERATOR', tenant), deviceId: randomUUID() };
    const ws = await createWorkspace(person);
    const mine = rec(ws, { content: 'from A' });
    const byPerson = rec(ws, { content: 'from a person' });
    expect((await putManyOk(deviceA, [mine])).written).toBe(1);
    expect((await putManyOk(person, [byPerson])).written).toBe(1);
    const out = await putManyOk(deviceB, [
      { ...mine, content: 'B overwrites' },
      { ...byPerson, content: 'B overwrites' },
      rec(ws, { content: 'B new' }),
    ]);
    expect(out.edges.map((e) => e.error && [e.error.code, e.error.field])).toEqual([
      ['FORBIDDEN', 'input.records[0].id'],
      ['FORBIDDEN', 'input.records[1].id'],
      null,
    ]);
    expect(await read(person, mine['id'] as string)).toMatchObject({ version: 1, content: 'from A' });
    const own = await putManyOk(deviceA, [{ ...mine, content: 'A again' }]);
    expect(own.edges[0]!.node).toMatchObject({ version: 2, content: 'A again' });
  });

  it('replays one key: the stored answer (per-item errors included), nothing written again', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const key = randomUUID();
    const records = [rec(ws), rec(ws, { kind: 'BAD' }), rec(ws)];
    const first = await putMany(p, records, key);
    const second = await putMany(p, records, key);
    expect(second.body.extensions?.['idempotentReplay']).toBe(true);
    expect(second.body.data).toEqual(first.body.data);
    expect(await read(p, records[0]!['id'] as string)).toMatchObject({ version: 1 });
    const reused = await putMany(p, [rec(ws)], key);
    expect(codeOf(reused)).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('limits the batch: 1 to 100 records (BAD_USER_INPUT, limit maxRecords), the body to MAX_BODY_BYTES', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const tooMany = Array.from({ length: 101 }, () => rec(ws));
    const r = await putMany(p, tooMany);
    expect(codeOf(r)).toBe('BAD_USER_INPUT');
    expect(r.body.errors![0]!.extensions).toMatchObject({
      field: 'input.records',
      limit: 'maxRecords',
      max: 100,
    });
    expect(r.body.errors![0]!.message).toContain('100');
    expect(await read(p, tooMany[0]!['id'] as string)).toBeNull();
    expect(codeOf(await putMany(p, []))).toBe('BAD_USER_INPUT');
    // Each content within MAX_PAYLOAD_BYTES, but together over the body limit: the whole call, before parsing.
    const big = Array.from({ length: 100 }, () => rec(ws, { content: 'y'.repeat(MAX_PAYLOAD - 1) }));
    const tooBig = await putMany(p, big);
    expect(tooBig.status).toBe(413);
    expect(codeOf(tooBig)).toBe('PAYLOAD_TOO_LARGE');
    expect(await read(p, big[0]!['id'] as string)).toBeNull();
  });

  it('lets a VIEWER read but not write a batch', async () => {
    const tenant = randomUUID();
    const ws = await createWorkspace(newPrincipal('OWNER', tenant));
    expect(codeOf(await putMany(newPrincipal('VIEWER', tenant), [rec(ws)]))).toBe('FORBIDDEN');
  });
});

describe('putMemories under concurrency', () => {
  it('loses no update against concurrent putMemory writes of the same record', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();
    const batches = Array.from({ length: 6 }, (_, i) =>
      putManyOk(p, [rec(ws), rec(ws, { id, content: `batch ${i}` }), rec(ws)]),
    );
    const singles = Array.from({ length: 6 }, (_, i) =>
      h.gql(p, PUT_ONE, {
        id,
        input: { workspaceId: ws, kind: 'note', content: `single ${i}` },
        key: randomUUID(),
      }),
    );
    const [b, s] = await Promise.all([Promise.all(batches), Promise.all(singles)]);
    const versions = [
      ...b.map((x) => x.edges[1]!.node!.version),
      ...s.map((x) => dataOf(x).putMemory.record.version as number),
    ].sort((x, y) => x - y);
    expect(versions).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect((await read(p, id))!.version).toBe(12);
  });

  it('lets exactly one of a batch and a putMemory with the same expectedVersion win', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const id = randomUUID();
    await putManyOk(p, [rec(ws, { id })]);
    const [batch, single] = await Promise.all([
      putManyOk(p, [rec(ws, { id, expectedVersion: 1, content: 'batch' })]),
      h.gql(p, PUT_ONE, {
        id,
        input: { workspaceId: ws, kind: 'note', content: 'single' },
        expectedVersion: 1,
        key: randomUUID(),
      }),
    ]);
    const batchWon = batch.written === 1;
    const singleWon = codeOf(single) === undefined;
    expect(batchWon !== singleWon).toBe(true);
    if (!batchWon)
      expect(batch.edges[0]!.error).toMatchObject({ code: 'VERSION_CONFLICT', currentVersion: 2 });
    else expect(codeOf(single)).toBe('VERSION_CONFLICT');
    expect((await read(p, id))!.version).toBe(2);
  });

  it('runs batches over the same ids in opposite orders without deadlock or lost writes', async () => {
    const p = newPrincipal();
    const ws = await createWorkspace(p);
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const forward = ids.map((id) => rec(ws, { id }));
    const backward = [...forward].reverse();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => putMany(p, i % 2 === 0 ? forward : backward)),
    );
    for (const r of results) expect(dataOf(r).putMemories.written).toBe(20);
    for (const id of ids) expect((await read(p, id))!.version).toBe(6);
  });
});

describe('putMemories and tenants', () => {
  it("cannot write into another tenant's workspace, nor touch its record of the same id", async () => {
    const a = newPrincipal();
    const b = newPrincipal();
    const wsA = await createWorkspace(a);
    const wsB = await createWorkspace(b);
    const shared = rec(wsA, { content: 'tenant A' });
    await putManyOk(a, [shared]);
    const out = await putManyOk(b, [
      rec(wsA, { content: 'into A' }),
      { ...shared, workspaceId: wsB, content: 'tenant B' },
    ]);
    expect(out.edges[0]!.error).toMatchObject({ code: 'NOT_FOUND', field: 'input.records[0].workspaceId' });
    // Ids are per tenant: B's record of that id is B's own, at version 1, and A's is untouched.
    expect(out.edges[1]!.node).toMatchObject({ version: 1, content: 'tenant B' });
    expect(await read(a, shared['id'] as string)).toMatchObject({ version: 1, content: 'tenant A' });
    expect(await read(b, shared['id'] as string)).toMatchObject({ version: 1, content: 'tenant B' });
    expect(await read(b, out.edges[0]!.id)).toBeNull();
  });
});
