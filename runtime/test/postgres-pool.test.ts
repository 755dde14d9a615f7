/**
 * The app pool keeps an idle connection for DATABASE_POOL_IDLE_SECONDS, then closes it. PostgreSQL only (PGlite has
 * no pool). The pool's idle timer runs on faked timers, so the test waits for nothing; the connection is real.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { provisionTestDatabase } from '../../test/src/database.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/open.js';

const onPostgres = Boolean(process.env['DATABASE_URL']);

describe.runIf(onPostgres)('PostgreSQL pool', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function open(env: NodeJS.ProcessEnv) {
    const t = await provisionTestDatabase({ DATABASE_URL: process.env['DATABASE_URL'] });
    cleanups.push(() => t.drop());
    const { db, handle } = await openDatabase(loadConfig({ ...t.env, ...env }), []);
    cleanups.push(() => handle.close());
    return db;
  }

  it('keeps an idle connection for DATABASE_POOL_IDLE_SECONDS and closes it after', async () => {
    const db = await open({ DATABASE_POOL_IDLE_SECONDS: '60' });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await db.query('SELECT 1');
    expect(db.poolStats!()).toEqual({ total: 1, idle: 1, waiting: 0 });
    // The driver's own default (10 s) would have closed it by now.
    vi.advanceTimersByTime(59_000);
    expect(db.poolStats!().total).toBe(1);
    expect((await db.query<{ n: number }>('SELECT 2 AS n')).rows[0]!.n).toBe(2);
    expect(db.poolStats!().total).toBe(1);
    // Idle again from the last query: closed a minute after it, not after the first.
    vi.advanceTimersByTime(59_000);
    expect(db.poolStats!().total).toBe(1);
    vi.advanceTimersByTime(2_000);
    expect(db.poolStats!()).toEqual({ total: 0, idle: 0, waiting: 0 });
    // A query after that opens a new connection.
    expect((await db.query<{ n: number }>('SELECT 3 AS n')).rows[0]!.n).toBe(3);
    expect(db.poolStats!().total).toBe(1);
  });

  it('keeps it for five minutes by default', async () => {
    const db = await open({});
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    await db.query('SELECT 1');
    vi.advanceTimersByTime(299_000);
    expect(db.poolStats!().total).toBe(1);
    vi.advanceTimersByTime(2_000);
    expect(db.poolStats!().total).toBe(0);
  });
});
