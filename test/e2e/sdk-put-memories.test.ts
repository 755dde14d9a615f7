/**
 * putMemories through each generated SDK (TypeScript in this process; Python, Debian's /usr/bin/python3 on
 * sdks/python; C#, a small program on sdks/csharp) against the memory subgraph over loopback (PGlite, or PostgreSQL
 * with DATABASE_URL): one call writes the good records and answers the bad one with its error and field, the same
 * call again with the same idempotency key is the server's replay (nothing written twice), and the records are there.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentGraph } from '../../sdks/typescript/src/index.js';
import { buildDotnetProject, DOTNET_ENV } from '../src/dotnet-build.js';
import { dataOf, newPrincipal, startSubgraph, type Harness } from '../src/subgraph-harness.js';
import { memorySubgraph } from '../../subgraphs/memory/src/index.js';
import { PYTHON, PYTHON_SDK_ENV } from './fixtures/python-sdk.js';

const PY_CLIENT = fileURLToPath(new URL('./fixtures/put_memories_client.py', import.meta.url));
const CS_PROJECT = fileURLToPath(new URL('./fixtures/PutMemoriesClient/', import.meta.url));
const CS_DLL = join(CS_PROJECT, 'bin/Release/net10.0/PutMemoriesClient.dll');

const owner = newPrincipal();
let h: Harness;
let token: string;
let workspaceId: string;

beforeAll(async () => {
  await buildDotnetProject(CS_PROJECT);
  h = await startSubgraph(memorySubgraph);
  token = await h.token(owner);
  const r = await h.gql(
    owner,
    `mutation ($k: ID!) { createWorkspace(input: { name: "sdks" }, idempotencyKey: $k) { workspace { id } } }`,
    { k: randomUUID() },
  );
  workspaceId = dataOf(r).createWorkspace.workspace.id as string;
}, 300_000);
afterAll(async () => {
  await h?.close();
});

interface CallSummary {
  written: number;
  failed: number;
  replayed: boolean;
  edges: {
    index: number;
    id: string;
    created: boolean | null;
    version: number | null;
    code: string | null;
    field: string | null;
  }[];
}

/** Three records: two good ones and one whose kind is invalid (index 1). */
function batch() {
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  const records = [
    { id: ids[0]!, workspaceId, kind: 'note', content: 'first', tags: ['sdk'] },
    { id: ids[1]!, workspaceId, kind: 'Not A Kind', content: 'refused' },
    { id: ids[2]!, workspaceId, kind: 'note', content: 'third', expectedVersion: 0 },
  ];
  return { ids, records };
}

async function expectBatch(
  ids: string[],
  out: { first: CallSummary; second: CallSummary },
  sdk: string,
): Promise<void> {
  expect(out.first, sdk).toEqual({
    written: 2,
    failed: 1,
    replayed: false,
    edges: [
      { index: 0, id: ids[0], created: true, version: 1, code: null, field: null },
      {
        index: 1,
        id: ids[1],
        created: null,
        version: null,
        code: 'BAD_USER_INPUT',
        field: 'input.records[1].kind',
      },
      { index: 2, id: ids[2], created: true, version: 1, code: null, field: null },
    ],
  });
  // The same key again: the stored answer, marked as a replay; nothing was written a second time.
  expect(out.second, sdk).toEqual({ ...out.first, replayed: true });
  const read = dataOf(
    await h.gql(
      owner,
      `query ($a: ID!, $b: ID!, $c: ID!) {
        a: memoryRecord(id: $a) { version content } b: memoryRecord(id: $b) { id } c: memoryRecord(id: $c) { version content }
      }`,
      { a: ids[0], b: ids[1], c: ids[2] },
    ),
  );
  expect(read, sdk).toEqual({
    a: { version: 1, content: 'first' },
    b: null,
    c: { version: 1, content: 'third' },
  });
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { env, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
    child.stdin!.end(token);
  });
}

describe('putMemories through the generated SDKs', () => {
  it('TypeScript: sdk.putMemories writes the good records, answers the bad one, and replays by key', async () => {
    const sdk = new AgentGraph({
      baseUrl: h.url,
      tokenProvider: { getToken: async () => token, refresh: async () => token },
      privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] },
    });
    const { ids, records } = batch();
    const key = randomUUID();
    type Envelope = Awaited<ReturnType<ReturnType<typeof sdk.putMemories>['withResponse']>>;
    const summary = (r: Envelope): CallSummary => ({
      written: r.data.putMemories.written,
      failed: r.data.putMemories.failed,
      replayed: r.replayed,
      edges: r.data.putMemories.edges.map((e) => ({
        index: e.index,
        id: e.id,
        created: e.created ?? null,
        version: e.node?.version ?? null,
        code: e.error?.code ?? null,
        field: e.error?.field ?? null,
      })),
    });
    // withResponse(): the envelope, for `replayed`.
    const first = summary(
      await sdk.putMemories({ input: { records } }, { idempotencyKey: key }).withResponse(),
    );
    const second = summary(
      await sdk.putMemories({ input: { records } }, { idempotencyKey: key }).withResponse(),
    );
    await expectBatch(ids, { first, second }, 'typescript');
  });

  it('Python: put_memories does the same', async () => {
    const { ids, records } = batch();
    const stdout = await run(PYTHON, [PY_CLIENT, h.url, JSON.stringify(records), randomUUID()], {
      ...process.env,
      ...PYTHON_SDK_ENV,
    });
    await expectBatch(ids, JSON.parse(stdout), 'python');
  });

  it('C#: PutMemoriesAsync does the same', async () => {
    const { ids, records } = batch();
    const stdout = await run('dotnet', [CS_DLL, h.url, JSON.stringify(records), randomUUID()], DOTNET_ENV);
    await expectBatch(ids, JSON.parse(stdout), 'csharp');
  });
});
