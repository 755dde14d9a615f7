/**
 * classifyDatabaseError against the errors `pg`, `pg-pool` and PGlite really produce: connections to a closed port, to
 * a loopback server that hangs up, resets or never answers, a pool with no free client, and (on PostgreSQL) a
 * terminated backend, a role over its connection limit and text PostgreSQL cannot store. Also the driver's side: a
 * transaction whose connection is terminated under it fails with a classified error and does not take the process
 * down, and a server that accepts but never answers fails a query after the pool's connection timeout.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyDatabaseError, DATABASE_RETRY_AFTER_MS } from '../src/db/errors.js';
import { openPostgres } from '../src/db/postgres.js';
import { drivers, openTestDatabase, type TestDb } from './helpers.js';

const onPostgres = Boolean(process.env['DATABASE_URL']);

/** A loopback TCP server that does `onConnection` with every socket; closed after the file. */
const servers: Server[] = [];
const sockets = new Set<Socket>();
async function loopback(onConnection: (s: Socket) => void): Promise<number> {
  const server = createServer((s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
    onConnection(s);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

function queryVia(url: string, options: Partial<pg.PoolConfig> = {}): Promise<unknown> {
  const pool = new pg.Pool({ connectionString: url, ...options });
  pool.on('error', () => undefined);
  return pool.query('SELECT 1').finally(() => pool.end().catch(() => undefined));
}

function expectUnavailable(err: unknown): void {
  const coded = classifyDatabaseError(err);
  expect(coded?.extensions).toEqual({ code: 'SERVICE_UNAVAILABLE', retryAfterMs: DATABASE_RETRY_AFTER_MS });
  // Nothing about where the database is or what the driver said.
  expect(coded!.message).not.toContain('127.0.0.1');
  expect(coded!.message).not.toContain((err as Error).message);
}

describe('classifyDatabaseError: connection failures from pg on loopback', () => {
  it('a refused connection (nothing listens): ECONNREFUSED', async () => {
    const err = await failure(queryVia(`postgres://u@127.0.0.1:${await closedPort()}/db`));
    expect((err as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    expectUnavailable(err);
    // The same error inside the AggregateError Node gives when a name resolves to several addresses.
    expectUnavailable(new AggregateError([err], 'connect failed'));
  });

  it('a server that hangs up: "Connection terminated unexpectedly"', async () => {
    const port = await loopback((s) => s.end());
    const err = await failure(queryVia(`postgres://u@127.0.0.1:${port}/db`));
    expect(err.message).toBe('Connection terminated unexpectedly');
    expectUnavailable(err);
  });

  it('a server that resets the connection: ECONNRESET', async () => {
    const port = await loopback((s) => s.resetAndDestroy());
    const err = await failure(queryVia(`postgres://u@127.0.0.1:${port}/db`));
    expect((err as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    expectUnavailable(err);
  });

  it('a server that never answers: the connect timeout, and a pool checkout that waited for it', async () => {
    const port = await loopback(() => undefined);
    const pool = new pg.Pool({
      connectionString: `postgres://u@127.0.0.1:${port}/db`,
      max: 1,
      connectionTimeoutMillis: 50,
    });
    pool.on('error', () => undefined);
    const [connecting, waiting] = await Promise.all([
      failure(pool.query('SELECT 1')),
      failure(pool.query('SELECT 2')),
    ]);
    await pool.end();
    expect(connecting.message).toBe('Connection terminated due to connection timeout');
    expect(waiting.message).toBe('timeout exceeded when trying to connect');
    expectUnavailable(connecting);
    expectUnavailable(waiting);
  });

  it('server-side connection states, as pg parses them (57P03 while starting, class 08)', () => {
    for (const [code, message] of [
      ['57P03', 'the database system is starting up'],
      ['57P02', 'terminating connection because of crash of another server process'],
      ['08006', 'connection failure'],
      ['08001', 'could not connect'],
    ] as const) {
      const err = Object.assign(new pg.DatabaseError(message, 100, 'error'), { code, severity: 'FATAL' });
      expectUnavailable(err);
    }
  });

  it('leaves everything else alone (masked as INTERNAL_SERVER_ERROR by the caller)', () => {
    const unique = Object.assign(new pg.DatabaseError('duplicate key', 100, 'error'), {
      code: '23505',
      severity: 'ERROR',
    });
    const protocol = Object.assign(new pg.DatabaseError('invalid message format', 100, 'error'), {
      code: '08P01',
      severity: 'ERROR',
    });
    for (const err of [new Error('boom'), new TypeError('x is undefined'), unique, protocol, 'text', null]) {
      expect(classifyDatabaseError(err)).toBeNull();
    }
  });
});

describe.runIf(onPostgres)('classifyDatabaseError: PostgreSQL', () => {
  const url = process.env['DATABASE_URL']!;

  it('a terminated backend: 57P01 admin_shutdown, then the client is "not queryable"', async () => {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    const terminated = await failure(client.query('SELECT pg_terminate_backend(pg_backend_pid())'));
    expect((terminated as pg.DatabaseError).code).toBe('57P01');
    expectUnavailable(terminated);
    const after = await failure(client.query('SELECT 1'));
    expectUnavailable(after);
  });

  it('a role over its connection limit: 53300 too_many_connections', async () => {
    const role = `ag_limited_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
      const u = new URL(url);
      u.username = role;
      const client = new pg.Client({ connectionString: u.toString() });
      const err = await failure(client.connect());
      expect((err as pg.DatabaseError).code).toBe('53300');
      expectUnavailable(err);
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  it('a NUL inside a simple-protocol statement (08P01) is no outage', async () => {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    const err = await failure(client.query("SELECT 'a\u0000b'"));
    await client.end().catch(() => undefined);
    expect((err as pg.DatabaseError).code).toBe('08P01');
    expect(classifyDatabaseError(err)).toBeNull();
  });
});

describe.each(drivers)('classifyDatabaseError: text the database cannot store (%s)', (driver) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDatabase(driver);
  });
  afterAll(() => t?.close());

  it('a NUL in a text parameter (22021) and a \\u0000 escape in JSON (22P05) → BAD_USER_INPUT', async () => {
    const nul = await failure(t.db.query('SELECT $1::text', ['a\u0000b']));
    const json = await failure(t.db.query('SELECT $1::jsonb', ['{"a": "\\u0000"}']));
    expect([(nul as { code?: string }).code, (json as { code?: string }).code]).toEqual(['22021', '22P05']);
    for (const err of [nul, json]) {
      const coded = classifyDatabaseError(err);
      expect(coded?.extensions['code']).toBe('BAD_USER_INPUT');
    }
  });
});

describe.runIf(onPostgres)('the PostgreSQL driver during an outage', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDatabase('postgres');
  });
  afterAll(() => t?.close());

  it('a transaction whose connection is terminated fails with a classified error; the pool recovers', async () => {
    // Without an error listener on the checked-out client, pg emits 'error' with no one listening, and Node ends the
    // process (vitest reports it as an unhandled error).
    const err = await failure(
      t.db.transaction(async (tx) => {
        const r = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // The owner (a superuser here) terminates it and waits until the backend has exited.
        await t.handle.owner.query('SELECT pg_terminate_backend($1::int, 10000)', [r.rows[0]!.pid]);
        await tx.query('SELECT 1');
      }),
    );
    expectUnavailable(err);
    expect((await t.db.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
  });
});

describe('the PostgreSQL driver against a server that never answers', () => {
  it('fails a query after the connection timeout instead of waiting for ever', async () => {
    const port = await loopback(() => undefined);
    const handle = await openPostgres(
      `postgres://u@127.0.0.1:${port}/db`,
      { size: 2, idleSeconds: 300 },
      'agentgraph_app',
    );
    try {
      const app = await handle.app();
      const [owner, ping] = await Promise.all([failure(handle.owner.query('SELECT 1')), failure(app.ping())]);
      expect(owner.message).toBe('Connection terminated due to connection timeout');
      expectUnavailable(owner);
      expectUnavailable(ping);
    } finally {
      await handle.close();
    }
  });
});
