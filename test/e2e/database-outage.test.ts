/**
 * PostgreSQL goes away under the running platform and comes back (PostgreSQL only: PGlite is in-process). The platform
 * reaches its database through a TCP proxy on loopback (test/src/tcp-proxy.ts); "stopping the server" is what a
 * stopping PostgreSQL does to its clients: every backend of the test database is terminated (57P01 admin_shutdown)
 * and the port refuses connections. Meanwhile every subgraph's answers through the gateway are 503 with Retry-After
 * and SERVICE_UNAVAILABLE (`retryAfterMs`), which the SDKs retry, not 500; /readyz is 503. Once the port accepts
 * again, the same requests succeed, and a mutation retried with its idempotency key runs once.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestPlatform, type GraphQLResult, type TestPlatform, type TestUser } from '../src/platform.js';
import { startTcpProxy, type TcpProxy } from '../src/tcp-proxy.js';

const onPostgres = Boolean(process.env['DATABASE_URL']);

/** One root field of each subgraph (all non-null: a failed one leaves the response without data). */
const READS: Record<string, string> = {
  identity: '{ viewer { user { email } } }',
  memory: '{ workspaces(first: 5) { edges { node { id } } } }',
  coordination: '{ rooms(first: 5) { edges { node { name } } } }',
  catalog: '{ plugins(first: 5) { edges { node { id } } } }',
};
const CREATE_ROOM =
  'mutation R($n: String!, $k: ID!) { createRoom(input: { name: $n }, idempotencyKey: $k) { room { id name } } }';

describe.skipIf(!onPostgres)('a PostgreSQL outage through the gateway', () => {
  let proxy: TcpProxy;
  let p: TestPlatform;
  let user: TestUser;
  let admin: pg.Client;
  let database: string;

  beforeAll(async () => {
    const base = process.env['DATABASE_URL']!;
    const server = new URL(base);
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    // The test database is made through the proxy too, so every URL the platform gets points at it.
    process.env['DATABASE_URL'] = proxy.rewrite(base);
    try {
      p = await startTestPlatform();
    } finally {
      process.env['DATABASE_URL'] = base;
    }
    const config = p.platform.config.database;
    if (config.driver !== 'postgres') throw new Error('expected PostgreSQL');
    database = new URL(config.url).pathname.slice(1);
    admin = new pg.Client({ connectionString: base });
    await admin.connect();
    user = await p.tokenFor({ tenant: 'outage' });
  });

  afterAll(async () => {
    await proxy?.up();
    await admin?.end();
    await p?.close();
    await proxy?.close();
  });

  /** What stopping PostgreSQL does: its backends end with admin_shutdown, and its port refuses connections. */
  async function stopDatabase(): Promise<void> {
    await admin.query(
      `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
        WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [database],
    );
    await proxy.down();
  }

  const gql = (query: string, variables?: Record<string, unknown>) => p.gql(query, variables, user.token);

  /** A standard client refreshing a token (an unknown one: oidc-provider looks it up in the database first). */
  async function refreshAtTokenEndpoint() {
    const res = await fetch(`${p.platform.subgraphs.identity}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'an-unknown-refresh-token',
        client_id: 'agentgraph-desktop',
      }),
    });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as Record<string, unknown>,
    };
  }

  function expectUnavailable(r: GraphQLResult, what: string): void {
    expect(r.status, `${what}: ${JSON.stringify(r.errors ?? r.raw)}`).toBe(503);
    expect(r.headers.get('retry-after'), what).toBe('2');
    expect(r.data ?? null, what).toBeNull();
    expect(r.errors?.[0]?.extensions, what).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      retryAfterMs: 2000,
    });
    expect(
      r.errors!.every((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE'),
      what,
    ).toBe(true);
  }

  it('answers 503 with Retry-After while the database is down, and serves again once it is back', async () => {
    // Before: every subgraph answers (this also warms the token caches, which need no database afterwards).
    for (const [subgraph, query] of Object.entries(READS)) {
      const r = await gql(query);
      expect(r.status, `${subgraph}: ${JSON.stringify(r.errors)}`).toBe(200);
      expect(r.errors, subgraph).toBeUndefined();
    }
    expect((await fetch(`${p.gatewayUrl}/readyz`)).status).toBe(200);

    await stopDatabase();
    for (const [subgraph, query] of Object.entries(READS)) expectUnavailable(await gql(query), subgraph);
    const key = randomUUID();
    expectUnavailable(await gql(CREATE_ROOM, { n: 'during the outage', k: key }), 'createRoom');
    expect((await fetch(`${p.gatewayUrl}/readyz`)).status).toBe(503);
    // Identity's OAuth endpoints (oidc-provider's own error handling) say so too: 503, Retry-After,
    // temporarily_unavailable, not 500 server_error.
    const down = await refreshAtTokenEndpoint();
    expect(down.status, JSON.stringify(down.body)).toBe(503);
    expect(down.retryAfter).toBe('2');
    expect(down.body['error']).toBe('temporarily_unavailable');

    await proxy.up();
    expect((await refreshAtTokenEndpoint()).body['error']).toBe('invalid_grant');
    for (const [subgraph, query] of Object.entries(READS)) {
      const r = await gql(query);
      expect(r.status, `${subgraph}: ${JSON.stringify(r.errors)}`).toBe(200);
      expect(r.errors, subgraph).toBeUndefined();
    }
    // The mutation the outage refused runs now with the same key: nothing of it was stored before.
    const retried = await gql(CREATE_ROOM, { n: 'during the outage', k: key });
    expect(retried.status).toBe(200);
    expect(retried.extensions?.['idempotentReplay']).toBeUndefined();
    const rooms = await gql(READS['coordination']!);
    expect(rooms.data.rooms.edges.map((e: { node: { name: string } }) => e.node.name)).toEqual([
      'during the outage',
    ]);
    expect((await fetch(`${p.gatewayUrl}/readyz`)).status).toBe(200);
  });

  it('logged no internal error for it', () => {
    expect(p.errorLogs.filter((l) => /resolver failed|request failed|INTERNAL_SERVER_ERROR/.test(l))).toEqual(
      [],
    );
  });
});
