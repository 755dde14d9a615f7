/**
 * Trusted documents on the real platform (identity, memory, coordination, catalog behind the gateway; PGlite, or
 * PostgreSQL under scripts/pg-cluster.sh): a manifest written here, documents of the real API schema.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../../test/src/platform.js';
import { sha256Hex, type OperationsManifest } from '../src/persisted.js';

const CAPS = 'query Caps { capabilities { schemaVersion } }';
const CREATE_ROOM =
  'mutation CreateRoom($name: String!, $k: ID!) { createRoom(input: { name: $name }, idempotencyKey: $k) { room { id name } } }';
const POST =
  'mutation Post($room: ID!, $body: String!, $k: ID!) { postMessage(roomId: $room, input: { body: $body }, idempotencyKey: $k) { message { seq } } }';
const MESSAGES =
  'subscription Messages($room: ID!, $after: Int) { roomMessages(roomId: $room, afterSeq: $after) { seq body } }';

const manifest: OperationsManifest = {
  version: 1,
  schemaVersion: '0123456789ab',
  operations: (
    [
      ['Caps', 'query', CAPS],
      ['CreateRoom', 'mutation', CREATE_ROOM],
      ['Messages', 'subscription', MESSAGES],
      ['Post', 'mutation', POST],
    ] as const
  ).map(([name, kind, document]) => ({ name, kind, sha256: sha256Hex(document), document })),
};
const pq = (document: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256Hex(document) } });

const dir = mkdtempSync(join(tmpdir(), 'agentgraph-trusted-'));
const manifestFile = join(dir, 'operations.manifest.json');
writeFileSync(manifestFile, JSON.stringify(manifest));

let p: TestPlatform;
beforeAll(async () => {
  p = await startTestPlatform({ PERSISTED_QUERIES: 'trusted', TRUSTED_DOCUMENTS_FILE: manifestFile });
});
afterAll(async () => {
  await p?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function stream(token: string, body: Record<string, unknown>) {
  const controller = new AbortController();
  const res = await fetch(`${p.gatewayUrl}/graphql/stream`, {
    method: 'POST',
    signal: controller.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify(body),
  });
  return { res, controller };
}

describe('trusted documents on the real platform', () => {
  it('runs manifest operations across subgraphs, by hash and in full, and streams a manifest subscription', async () => {
    const caps = await p.post(JSON.stringify({ extensions: pq(CAPS) }));
    expect(caps.status).toBe(200);
    expect(caps.data.capabilities.schemaVersion).toMatch(/^[0-9a-f]{12}$/);

    const alice = await p.tokenFor({ tenant: `trusted-${randomUUID().slice(0, 8)}` });
    const room = await p.gql(CREATE_ROOM, { name: 'trusted room', k: randomUUID() }, alice.token);
    expect(room.errors).toBeUndefined();
    const roomId = room.data.createRoom.room.id as string;
    const posted = await p.post(
      JSON.stringify({ extensions: pq(POST), variables: { room: roomId, body: 'hello', k: randomUUID() } }),
      { authorization: `Bearer ${alice.token}` },
    );
    expect(posted.data.postMessage.message.seq).toBe(1);

    const { res, controller } = await stream(alice.token, {
      extensions: pq(MESSAGES),
      variables: { room: roomId, after: 0 },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('"body":"hello"')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended early: ${text}`);
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    await reader.cancel().catch(() => undefined);
  });

  it('refuses other documents on /graphql and /graphql/stream with OPERATION_NOT_TRUSTED', async () => {
    const alice = await p.tokenFor({ tenant: `trusted-${randomUUID().slice(0, 8)}` });
    const viewer = await p.gql('query Me { viewer { user { email } } }', undefined, alice.token);
    expect(viewer.status).toBe(400);
    expect(viewer.errors?.[0]?.extensions?.['code']).toBe('OPERATION_NOT_TRUSTED');
    expect(viewer.errors?.[0]?.message).toContain('"Me"');
    const introspection = await p.gql('{ __schema { queryType { name } } }');
    expect(introspection.errors?.[0]?.extensions?.['code']).toBe('OPERATION_NOT_TRUSTED');

    const { res } = await stream(alice.token, {
      query: 'subscription Other($room: ID!) { roomMessages(roomId: $room) { seq } }',
      variables: { room: randomUUID() },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { errors: Array<{ extensions: Record<string, unknown> }> };
    expect(body.errors[0]!.extensions).toMatchObject({
      code: 'OPERATION_NOT_TRUSTED',
      operationName: 'Other',
    });
  });
});
