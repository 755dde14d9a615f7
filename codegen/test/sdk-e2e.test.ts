/**
 * The generated TypeScript SDK (sdks/typescript, as committed) against the real platform: four subgraphs and the
 * gateway on loopback, PGlite in memory or PostgreSQL when DATABASE_URL is set. Every request goes over real HTTP
 * through a counting fetch, so the tests see how many requests a call made.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform, type TestUser } from '../../test/src/platform.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { showErrors } from '../../sdks/typescript/examples/errors.js';
import { postOnce } from '../../sdks/typescript/examples/mutations.js';
import { postThroughOutbox } from '../../sdks/typescript/examples/outbox.node.js';
import { listRooms } from '../../sdks/typescript/examples/pagination.js';
import { quickstart } from '../../sdks/typescript/examples/quickstart.js';
import {
  AbortError,
  AgentGraph,
  AgentGraphError,
  type FetchLike,
  NotFoundError,
  operations,
  PrivacyError,
  RateLimitedError,
} from '../../sdks/typescript/src/index.js';

let p: TestPlatform;
let user: TestUser;
beforeAll(async () => {
  p = await startTestPlatform();
  user = await p.tokenFor({ tenant: 'sdk-e2e' });
});
afterAll(async () => {
  await p?.close();
});

interface Sent {
  operationName: string;
  variables: Record<string, unknown>;
}

/** An SDK client whose requests are recorded (operation and variables), allowing PERSONAL data by default. */
function sdkFor(u: TestUser, personal = true): { sdk: AgentGraph; sent: Sent[] } {
  const sent: Sent[] = [];
  const countingFetch: FetchLike = (input, init) => {
    const body = JSON.parse(String(init?.body)) as Sent;
    sent.push({ operationName: body.operationName, variables: body.variables });
    return fetch(input, init);
  };
  const sdk = new AgentGraph({
    baseUrl: `${p.gatewayUrl}/graphql`,
    fetch: countingFetch,
    tokenProvider: { getToken: async () => u.token, refresh: async () => u.token },
    ...(personal ? { privacyPolicy: { allow: ['PUBLIC', 'INTERNAL', 'PERSONAL'] } } : {}),
  });
  return { sdk, sent };
}

describe(`the generated TypeScript SDK against the platform (${process.env['DATABASE_URL'] ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('queries viewer', async () => {
    const { sdk, sent } = sdkFor(user);
    // The model directly; the envelope of the same call through withResponse().
    const data = await sdk.viewer();
    expect(data.viewer.user.id).toBe(user.userId);
    expect(data.viewer.user.email).toBe(user.email);
    expect(data.viewer.role).toBe('OWNER');
    expect(data.viewer.tenant.id).toBe(user.tenantId);
    expect(sent).toEqual([{ operationName: 'Viewer', variables: {} }]);
    const { data: again, attempts, replayed, response } = await sdk.viewer().withResponse();
    expect(again).toEqual(data);
    expect({ attempts, replayed, status: response.status }).toEqual({
      attempts: 1,
      replayed: false,
      status: 200,
    });
    expect(sent).toHaveLength(2); // one request per call, whichever way it is read
  });

  it('pages through a connection across pages, one request per page, and stops when aborted', async () => {
    const owner = await p.tokenFor({ tenant: 'sdk-pages' });
    const { sdk, sent } = sdkFor(owner);
    const names = ['a', 'b', 'c', 'd', 'e'].map((n) => `room-${n}`);
    for (const name of names) await sdk.createRoom({ input: { name } });
    sent.length = 0;

    const seen: string[] = [];
    for await (const room of sdk.paginateRooms({ first: 2 })) seen.push(room.name);
    expect([...seen].sort()).toEqual(names);
    expect(sent.map((s) => s.operationName)).toEqual(['Rooms', 'Rooms', 'Rooms']);
    expect(sent[0]!.variables).toEqual({ first: 2 });
    expect(typeof sent[1]!.variables['after']).toBe('string');

    // Abort after the first node: the loop throws AbortError and asks for no further page.
    sent.length = 0;
    const controller = new AbortController();
    const taken: string[] = [];
    await expect(
      (async () => {
        for await (const room of sdk.paginateRooms({ first: 2 }, { signal: controller.signal })) {
          taken.push(room.name);
          controller.abort();
        }
      })(),
    ).rejects.toBeInstanceOf(AbortError);
    expect(taken).toHaveLength(1);
    expect(sent).toHaveLength(1);
  });

  it('posts a message with an idempotency key: the resend is a replay, the message exists once', async () => {
    const { sdk } = sdkFor(user);
    const room = (await sdk.createRoom({ input: { name: 'sdk-idempotency' } })).createRoom.room;
    const idempotencyKey = randomUUID();
    const first = await sdk
      .postMessage({ roomId: room.id, input: { body: 'hello' } }, { idempotencyKey })
      .withResponse();
    const again = await sdk
      .postMessage({ roomId: room.id, input: { body: 'hello' } }, { idempotencyKey })
      .withResponse();
    expect(first.replayed).toBe(false);
    expect(first.idempotencyKey).toBe(idempotencyKey);
    expect(again.replayed).toBe(true);
    expect(again.data).toEqual(first.data);
    expect(again.response.status).toBe(200);
    expect(first.data.postMessage.message).toMatchObject({
      seq: 1,
      body: 'hello',
      author: { id: user.userId },
    });

    const log: number[] = [];
    for await (const m of sdk.paginateRoomMessages({ roomId: room.id, first: 10 })) log.push(m.seq);
    expect(log).toEqual([1]);

    // Without a caller key the SDK makes one per call: two calls, two messages.
    const a = await sdk.postMessage({ roomId: room.id, input: { body: 'x' } }).withResponse();
    const b = await sdk.postMessage({ roomId: room.id, input: { body: 'x' } }).withResponse();
    expect(a.idempotencyKey).not.toBe(b.idempotencyKey);
    expect(b.data.postMessage.message.seq).toBe(3);
    // Awaited directly, a method gives the model.
    expect((await sdk.postMessage({ roomId: room.id, input: { body: 'y' } })).postMessage.message.seq).toBe(
      4,
    );
  });

  it('throws typed errors: NOT_FOUND from the server, the privacy gate before anything is sent', async () => {
    const { sdk, sent } = sdkFor(user);
    const err = await sdk
      .postMessage({ roomId: randomUUID(), input: { body: 'anyone?' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toBeInstanceOf(AgentGraphError);
    expect(err).not.toBeInstanceOf(RateLimitedError);
    expect((err as NotFoundError).code).toBe('NOT_FOUND');
    expect((err as NotFoundError).retryable).toBe(false);

    // The default policy (PUBLIC + INTERNAL) refuses a PERSONAL message body: nothing leaves the process.
    const strict = sdkFor(user, false);
    const refused = await strict.sdk
      .postMessage({ roomId: randomUUID(), input: { body: 'personal' } })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PrivacyError);
    expect((refused as PrivacyError).refusals).toEqual([{ path: 'input.body', reason: 'class:PERSONAL' }]);
    expect(strict.sent).toEqual([]);

    // A missing parent of a paged connection ends the loop with NotFoundError.
    sent.length = 0;
    const paging = (async () => {
      for await (const _m of sdk.paginateRoomMessages({ roomId: randomUUID() })) void _m;
    })();
    await expect(paging).rejects.toBeInstanceOf(NotFoundError);
  });

  it('sends the documents of the manifest, and the capabilities query the runtime applies', async () => {
    const { sdk, sent } = sdkFor(user);
    const caps = await sdk.client.refreshCapabilities();
    expect(caps.client?.retryMaxAttempts).toBeGreaterThan(0);
    const info = await sdk.serverCapabilities();
    expect(info.capabilities.schemaVersion).toMatch(/^[0-9a-f]{12}$/);
    expect(sent.map((s) => s.operationName)).toEqual(['Capabilities', 'ServerCapabilities']);
    expect(operations.Capabilities.kind).toBe('query');
  });

  it("runs the README's quickstart example as written", async () => {
    const owner = await p.tokenFor({ tenant: 'sdk-quickstart', displayName: 'Quinn' });
    const { sdk } = sdkFor(owner);
    const room = (await sdk.createRoom({ input: { name: 'quickstart' } })).createRoom.room;
    const lines: string[] = [];
    await quickstart({
      baseUrl: `${p.gatewayUrl}/graphql`,
      getToken: async () => owner.token,
      refreshToken: async () => owner.token,
      roomId: room.id,
      log: (...args) => lines.push(args.map(String).join(' ')),
    });
    expect(lines[0]).toBe('Quinn is OWNER of sdk-quickstart');
    expect(lines).toContain('message 1, replayed: true');
    expect(lines.at(-1)).toMatch(/^no such room \(correlation id [^)]+\)$/);
    expect(lines.at(-1)).not.toContain('undefined');
  });

  it("runs the README's mutations, pagination, errors and outbox examples as written", async () => {
    const owner = await p.tokenFor({ tenant: 'sdk-readme' });
    const { sdk } = sdkFor(owner);
    const rooms = [];
    for (const name of ['r1', 'r2', 'r3'])
      rooms.push((await sdk.createRoom({ input: { name } })).createRoom.room);
    const roomId = rooms[0]!.id;

    const posted = await postOnce(sdk, roomId, 'once');
    expect(posted).toMatchObject({ seq: 1, sameMessage: true, replayed: true, attempts: 1, status: 200 });
    expect(posted.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(posted.correlationId).toBeTruthy();

    const listed = await listRooms(sdk, 2, 2);
    expect(listed.names).toHaveLength(2); // aborted after two rooms
    expect(listed.firstPage).toHaveLength(2);
    expect(listed.hasNextPage).toBe(true);
    expect([...(await listRooms(sdk, 2)).names].sort()).toEqual(['r1', 'r2', 'r3']);

    const errors = await showErrors(sdk, `${p.gatewayUrl}/graphql`, owner.token);
    expect(errors.missing).toMatch(/^not found \(correlation id [^)]+\)$/);
    expect(errors.refused).toBe('refused before sending: input.body class:PERSONAL');

    const dir = mkdtempSync(join(tmpdir(), 'sdk-readme-outbox-'));
    try {
      const delivered = await postThroughOutbox(sdk, join(dir, 'outbox.db'), rooms[1]!.id, ['a', 'b', 'c']);
      expect(delivered).toMatchObject({ sent: 3, deadLetters: [] });
      expect(JSON.parse(delivered.exported).entries).toEqual([]);
      const log: string[] = [];
      for await (const m of sdk.paginateRoomMessages({ roomId: rooms[1]!.id })) log.push(m.body);
      expect(log).toEqual(['a', 'b', 'c']);
      // A room that does not exist: NOT_FOUND is not retryable, so the entry is a dead letter at once.
      const refused = await postThroughOutbox(sdk, join(dir, 'refused.db'), randomUUID(), ['lost']);
      expect(refused).toMatchObject({
        sent: 0,
        deadLetters: [{ reason: 'NOT_FOUND', failedDeliveries: 0 }],
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
