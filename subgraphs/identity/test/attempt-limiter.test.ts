/** The database-backed failed-attempt limiter, on a fake clock (every `now` is passed in). */
import { loadConfig, openDatabase, type Database, type DatabaseHandle } from '@agentgraph/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionTestDatabase, type TestDatabase } from '../../../test/src/database.js';
import {
  assertNotLocked,
  clearFailures,
  purgeStaleAttempts,
  recordFailure,
  SIGN_IN_EMAIL_POLICY,
  type AttemptPolicy,
} from '../src/attempt-limiter.js';
import { identityMigrations } from '../src/index.js';

const POLICY: AttemptPolicy = { maxFailures: 5, windowSeconds: 900, lockSeconds: 900 };
const T0 = new Date('2030-01-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const MIN = 60_000;

let testDb: TestDatabase;
let db: Database;
let handle: DatabaseHandle;

beforeAll(async () => {
  testDb = await provisionTestDatabase();
  ({ db, handle } = await openDatabase(loadConfig({ ...testDb.env }), [identityMigrations], 'identity'));
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

async function lockError(key: string | string[], now: Date) {
  try {
    await assertNotLocked(db, key, now);
    return null;
  } catch (err) {
    return err as { message: string; extensions: Record<string, unknown> };
  }
}

describe('attempt limiter', () => {
  it('purges counters whose window is over a day old and that are not locked', async () => {
    await recordFailure(db, 'purge:old', POLICY, at(0));
    for (let i = 0; i < 5; i++)
      await recordFailure(db, 'purge:locked', { ...POLICY, lockSeconds: 3 * 86_400 }, at(0));
    await recordFailure(db, 'purge:fresh', POLICY, at(24 * 60 * MIN));
    expect(await purgeStaleAttempts(db, at(24 * 60 * MIN + MIN))).toBe(1);
    const left = await db.query<{ key: string }>(
      "SELECT key FROM identity.auth_attempts WHERE key LIKE 'purge:%' ORDER BY key",
    );
    expect(left.rows.map((r) => r.key)).toEqual(['purge:fresh', 'purge:locked']);
  });

  it('sign-in per e-mail is 5 failures in 15 minutes → locked 15 minutes', () => {
    expect(SIGN_IN_EMAIL_POLICY).toEqual({ maxFailures: 5, windowSeconds: 900, lockSeconds: 900 });
  });

  it('locks on the 5th failure in the window and refuses the 6th attempt with the exact wait', async () => {
    const key = 'test:lock';
    for (let i = 0; i < 4; i++) {
      expect(await recordFailure(db, key, POLICY, at(i * MIN))).toEqual({ locked: false, retryAfterMs: 0 });
      expect(await lockError(key, at(i * MIN))).toBeNull();
    }
    expect(await recordFailure(db, key, POLICY, at(4 * MIN))).toEqual({
      locked: true,
      retryAfterMs: 15 * MIN,
    });
    const refused = await lockError(key, at(5 * MIN));
    expect(refused?.extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: 14 * MIN });
    expect(refused?.message).toBe('Too many failed attempts. Wait 14 minutes and try again.');
    expect((await lockError(key, at(19 * MIN - 1)))?.extensions['retryAfterMs']).toBe(1);
    expect(await lockError(key, at(19 * MIN))).toBeNull();
  });

  it('starts a new window once the old one has passed', async () => {
    const key = 'test:window';
    for (let i = 0; i < 4; i++) await recordFailure(db, key, POLICY, at(i * MIN));
    // 15 minutes after the window started: the count starts over at 1.
    for (let i = 0; i < 4; i++) {
      expect((await recordFailure(db, key, POLICY, at(15 * MIN + i))).locked).toBe(false);
    }
    expect((await recordFailure(db, key, POLICY, at(15 * MIN + 4))).locked).toBe(true);
  });

  it('clearFailures forgets the failures (a success resets the count)', async () => {
    const key = 'test:clear';
    for (let i = 0; i < 4; i++) await recordFailure(db, key, POLICY, at(i));
    await clearFailures(db, key);
    for (let i = 0; i < 4; i++) expect((await recordFailure(db, key, POLICY, at(10 + i))).locked).toBe(false);
  });

  it('keeps keys apart', async () => {
    for (let i = 0; i < 5; i++) await recordFailure(db, 'test:a', POLICY, at(i));
    expect(await lockError('test:a', at(10))).not.toBeNull();
    expect(await lockError('test:b', at(10))).toBeNull();
  });

  it('checks several keys at once and answers the longest wait among the locked ones', async () => {
    for (let i = 0; i < 5; i++) await recordFailure(db, 'test:many:a', POLICY, at(i * MIN));
    for (let i = 0; i < 5; i++) await recordFailure(db, 'test:many:b', POLICY, at(0));
    expect(await lockError(['test:many:free'], at(5 * MIN))).toBeNull();
    const both = await lockError(['test:many:b', 'test:many:a', 'test:many:free'], at(5 * MIN));
    expect(both?.extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: 14 * MIN }); // a's, locked at 4 minutes
    const one = await lockError(['test:many:free', 'test:many:b'], at(5 * MIN));
    expect(one?.extensions['retryAfterMs']).toBe(10 * MIN);
  });

  it('counts concurrent failures exactly (one row, atomic upsert)', async () => {
    const key = 'test:concurrent';
    const results = await Promise.all([0, 1, 2, 3, 4].map(() => recordFailure(db, key, POLICY, at(0))));
    expect(results.filter((r) => r.locked)).toHaveLength(1);
    expect(await lockError(key, at(1))).not.toBeNull();
    const rows = await db.query<{ failures: number }>(
      'SELECT failures FROM identity.auth_attempts WHERE key = $1',
      [key],
    );
    expect(rows.rows).toEqual([{ failures: 5 }]);
  });
});
