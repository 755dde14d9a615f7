/** The client over real HTTP on loopback (the vectors cover the same logic over a scripted transport). */
import { afterEach, describe, expect, it } from 'vitest';
import {
  AbortError,
  AgentGraphClient,
  type AgentGraphClientOptions,
  type Clock,
  type LogEntry,
  NetworkError,
  type OperationSpec,
  TimeoutError,
} from '../src/index.js';
import { errorTable, json, type Loopback, loopback, TestClock } from './helpers.js';

const CREATE_ROOM: OperationSpec = {
  name: 'CreateRoom',
  document:
    'mutation CreateRoom($input: CreateRoomInput!, $idempotencyKey: ID!) { createRoom(input: $input, idempotencyKey: $idempotencyKey) { room { id } } }',
  kind: 'mutation',
  idempotent: true,
  privacy: { 'input.name': { class: 'INTERNAL', required: true } },
};
const VIEWER: OperationSpec = {
  name: 'Viewer',
  document: 'query Viewer { viewer { user { email } } }',
  kind: 'query',
  idempotent: false,
  privacy: {},
};

let server: Loopback | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function client(url: string, extra: Partial<AgentGraphClientOptions> = {}) {
  return new AgentGraphClient({
    baseUrl: url,
    errorTable,
    clock: new TestClock(),
    random: () => 0.5,
    tokenProvider: { getToken: async () => 'token-1', refresh: async () => 'token-2' },
    ...extra,
  });
}

describe('AgentGraphClient over real HTTP', () => {
  it('POSTs GraphQL over HTTP with the token, the accept header and one key reused across a 503 retry', async () => {
    server = await loopback((i, _req, res) =>
      i === 0
        ? json(
            res,
            503,
            { errors: [{ message: 'Not ready.', extensions: { code: 'SERVICE_UNAVAILABLE' } }] },
            {
              'retry-after': '2',
            },
          )
        : json(res, 200, {
            data: { createRoom: { room: { id: 'r1' } } },
            extensions: { idempotentReplay: true },
          }),
    );
    const clock = new TestClock();
    const result = await client(server.url, { clock, newKey: () => 'key-abc' }).execute(CREATE_ROOM, {
      input: { name: 'ops' },
    });
    const { response, ...envelope } = result;
    expect(envelope).toEqual({
      data: { createRoom: { room: { id: 'r1' } } },
      extensions: { idempotentReplay: true },
      replayed: true,
      attempts: 2,
      idempotencyKey: 'key-abc',
    });
    // The answer that carried the result (the second attempt's), as the generated methods' withResponse() gives it.
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: envelope.data, extensions: envelope.extensions });
    expect(response.bytes).toBeGreaterThan(0);
    expect(clock.sleeps).toEqual([2000]);
    expect(server.received).toHaveLength(2);
    for (const { headers, body } of server.received) {
      expect(headers['idempotency-key']).toBe('key-abc');
      expect(headers['authorization']).toBe('Bearer token-1');
      expect(headers['content-type']).toBe('application/json');
      expect(headers['accept']).toContain('application/graphql-response+json');
      expect(body).toEqual({
        query: CREATE_ROOM.document,
        operationName: 'CreateRoom',
        variables: { input: { name: 'ops' }, idempotencyKey: 'key-abc' },
      });
    }
  });

  it('times out an attempt that gets no answer, retries it with the same key, and gives up after maxAttempts', async () => {
    server = await loopback(() => undefined); // never answers
    const err = await client(server.url, { timeoutMs: 100, retry: { maxAttempts: 2 }, newKey: () => 'k1' })
      .execute(CREATE_ROOM, { input: { name: 'ops' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err).toMatchObject({ code: 'TIMEOUT', retryable: true, attempts: 2, giveUpReason: 'attempts' });
    expect(server.received.map((r) => r.headers['idempotency-key'])).toEqual(['k1', 'k1']);
  });

  it('aborts an in-flight request with AbortError and does not retry', async () => {
    const controller = new AbortController();
    server = await loopback(() => controller.abort());
    const err = await client(server.url)
      .execute(VIEWER, {}, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(server.received).toHaveLength(1);
  });

  it('aborts a backoff wait with AbortError', async () => {
    const controller = new AbortController();
    const waitingClock: Clock = {
      now: () => 0,
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
          controller.abort();
        }),
    };
    server = await loopback((_i, _req, res) =>
      json(res, 500, { errors: [{ message: 'boom', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] }),
    );
    const err = await client(server.url, { clock: waitingClock })
      .execute(VIEWER, {}, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(server.received).toHaveLength(1);
  });

  it('reports a refused connection as a retryable NetworkError', async () => {
    server = await loopback(() => undefined);
    const url = server.url;
    await server.close();
    server = undefined;
    const clock = new TestClock();
    const err = await client(url, { clock, retry: { maxAttempts: 3 } })
      .execute(VIEWER)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({
      code: 'NETWORK_ERROR',
      retryable: true,
      attempts: 3,
      giveUpReason: 'attempts',
    });
    expect(clock.sleeps).toHaveLength(2);
  });

  it('reads and applies the server’s capabilities', async () => {
    server = await loopback((_i, _req, res) =>
      json(res, 200, {
        data: {
          capabilities: {
            limits: { maxPayloadBytes: 1234 },
            client: {
              retryMaxAttempts: 3,
              retryBudgetMs: 9000,
              pollIntervalMs: 5000,
              telemetryEnabled: false,
            },
          },
        },
      }),
    );
    const c = client(server.url, { retry: { maxAttempts: 7 } });
    expect(c.settings.retry.maxAttempts).toBe(7);
    await c.refreshCapabilities();
    expect(c.settings).toMatchObject({
      maxPayloadBytes: 1234,
      pollIntervalMs: 5000,
      telemetryEnabled: false,
      retry: { maxAttempts: 3, budgetMs: 9000 },
    });
    expect(server.received[0]!.body.operationName).toBe('Capabilities');
  });

  it('logs metadata only: never the token, the key, headers or variable values', async () => {
    server = await loopback((i, _req, res) =>
      i === 0
        ? json(res, 401, { errors: [{ message: 'expired', extensions: { code: 'UNAUTHENTICATED' } }] })
        : json(res, 200, { data: { createRoom: { room: { id: 'r1' } } } }),
    );
    const entries: LogEntry[] = [];
    await client(server.url, {
      newKey: () => 'key-SECRET-1',
      headers: { 'x-api-secret': 'header-SECRET' },
      logger: { log: (e) => entries.push(e) },
    }).execute(CREATE_ROOM, { input: { name: 'name-SECRET' } });
    const text = JSON.stringify(entries);
    for (const secret of ['token-1', 'token-2', 'key-SECRET-1', 'header-SECRET', 'name-SECRET']) {
      expect(text).not.toContain(secret);
    }
    expect(entries.map((e) => e.event)).toEqual(['attempt', 'attempt', 'call']);
    expect(entries[0]).toMatchObject({
      method: 'POST',
      operation: 'CreateRoom',
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    expect(entries[2]).toMatchObject({ event: 'call', status: 200, attempts: 2 });
    for (const e of entries) {
      expect(e.bytes).toBeGreaterThan(0);
      expect(typeof e.latencyMs).toBe('number');
    }
  });

  it('refuses two different idempotency keys for one call, before sending', async () => {
    server = await loopback((_i, _req, res) => json(res, 200, { data: {} }));
    await expect(
      client(server.url).execute(
        CREATE_ROOM,
        { input: { name: 'a' }, idempotencyKey: 'a' },
        { idempotencyKey: 'b' },
      ),
    ).rejects.toThrow(/two different idempotency keys/);
    expect(server.received).toHaveLength(0);
  });

  it('checks its options', () => {
    expect(() => new AgentGraphClient({ baseUrl: '', errorTable })).toThrow(/baseUrl/);
    expect(
      () => new AgentGraphClient({ baseUrl: 'http://x', errorTable, retry: { maxAttempts: 0 } }),
    ).toThrow(/retry.maxAttempts/);
    expect(() => new AgentGraphClient({ baseUrl: 'http://x', errorTable: {} as never })).toThrow(
      /errorTable/,
    );
  });
});
