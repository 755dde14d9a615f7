import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../src/db/types.js';
import { AppError } from '../src/errors.js';
import {
  eraseIdempotentResponses,
  fingerprint,
  purgeExpiredIdempotencyKeys,
  runIdempotent,
} from '../src/idempotency.js';
import { idempotentMutation } from '../src/mutation.js';
import type { SubgraphContext } from '../src/subgraph-server.js';
import { withTenant, type AuthContext } from '../src/tenancy.js';
import { deferred, drivers, expectAppError, openTestDatabase, type TestDb } from './helpers.js';

const fxMigrations = { namespace: 'fx', dir: new URL('./fixtures/migrations', import.meta.url).pathname };
const DAY = 86_400;

function authFor(tenantId = randomUUID(), principalId = 'user-1'): AuthContext {
  return { tenantId, principalId, role: 'OWNER', scopes: [] };
}

const key = () => `key-${randomUUID()}`;

describe('fingerprint', () => {
  it('depends on the operation and the arguments, not on their key order', () => {
    const a = fingerprint('Mutation.post', { text: 'a', room: 'r' });
    expect(fingerprint('Mutation.post', { room: 'r', text: 'a' })).toBe(a);
    expect(fingerprint('Mutation.post', { room: 'r', text: 'b' })).not.toBe(a);
    expect(fingerprint('Mutation.edit', { room: 'r', text: 'a' })).not.toBe(a);
  });
});

describe.each(drivers)('idempotency keys on %s', (driver) => {
  let t: TestDb;
  let db: Database;

  beforeAll(async () => {
    t = await openTestDatabase(driver, [fxMigrations]);
    db = t.db;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The effect every test runs: one row in fx.effects, and a JSON result that includes a Date. */
  const post =
    (note: string, hook?: () => Promise<void>) =>
    async (tx: Queryable): Promise<{ id: number; note: string; at: Date }> => {
      const r = await tx.query<{ id: number }>('INSERT INTO fx.effects (note) VALUES ($1) RETURNING id', [
        note,
      ]);
      await hook?.();
      return { id: r.rows[0]!.id, note, at: new Date('2030-01-01T00:00:00Z') };
    };

  const effects = async (auth: AuthContext) =>
    withTenant(db, auth, async (tx) =>
      (await tx.query<{ note: string }>('SELECT note FROM fx.effects ORDER BY id')).rows.map((r) => r.note),
    );

  const run = (auth: AuthContext, k: string, args: Record<string, unknown>, hook?: () => Promise<void>) =>
    runIdempotent(
      db,
      auth,
      { key: k, operation: 'Mutation.post', args },
      DAY,
      post(String(args['text']), hook),
    );

  it('runs the effect once for the same key and arguments, and replays the stored result', async () => {
    const auth = authFor();
    const k = key();
    const first = await run(auth, k, { text: 'hello', room: 'r1' });
    const again = await run(auth, k, { room: 'r1', text: 'hello' });
    expect(first.replayed).toBe(false);
    expect(again.replayed).toBe(true);
    expect(again.result).toEqual(first.result);
    expect(first.result).toMatchObject({ note: 'hello', at: '2030-01-01T00:00:00.000Z' }); // JSON, as replayed
    expect(await effects(auth)).toEqual(['hello']);
  });

  it('claims the key in one statement: a first run adds one more (the stored answer), a replay none', async () => {
    const auth = authFor();
    const k = key();
    const seen: string[] = [];
    const counted: Database = {
      ...db,
      transaction: (fn, settings) =>
        db.transaction(
          (tx) =>
            fn({
              query: (sql, params) => {
                seen.push(sql.trim().split(/\s+/).slice(0, 4).join(' '));
                return tx.query(sql, params);
              },
            }),
          settings,
        ),
    };
    const once = () =>
      runIdempotent(
        counted,
        auth,
        { key: k, operation: 'Mutation.post', args: { text: 'x' } },
        DAY,
        post('x'),
      );
    expect((await once()).replayed).toBe(false);
    expect(seen).toEqual([
      'SELECT locked, fingerprint, response,',
      'INSERT INTO fx.effects (note)',
      'INSERT INTO runtime.idempotency_keys (tenant_id,',
    ]);
    seen.length = 0;
    expect((await once()).replayed).toBe(true);
    expect(seen).toEqual(['SELECT locked, fingerprint, response,']);
  });

  it('answers IDEMPOTENCY_KEY_REUSED for the same key with other arguments or another operation', async () => {
    const auth = authFor();
    const k = key();
    await run(auth, k, { text: 'one' });
    await expectAppError(run(auth, k, { text: 'two' }), 'IDEMPOTENCY_KEY_REUSED');
    await expectAppError(
      runIdempotent(db, auth, { key: k, operation: 'Mutation.other', args: { text: 'one' } }, DAY, post('x')),
      'IDEMPOTENCY_KEY_REUSED',
    );
    expect(await effects(auth)).toEqual(['one']);
  });

  it.each([
    ['too short', 'short'],
    ['with a space', 'has space inside'],
    ['too long', 'x'.repeat(256)],
    ['not ASCII', 'ünïcode-key'],
  ])('rejects a malformed key (%s) with BAD_USER_INPUT', async (_, bad) => {
    const auth = authFor();
    await expectAppError(run(auth, bad, { text: 'x' }), 'BAD_USER_INPUT');
    expect(await effects(auth)).toEqual([]);
  });

  it('leaves no key behind when the effect fails, so a retry with the key runs', async () => {
    const auth = authFor();
    const k = key();
    await expect(
      run(auth, k, { text: 'boom' }, async () => {
        throw new Error('effect failed after writing');
      }),
    ).rejects.toThrow('effect failed after writing');
    expect(await effects(auth)).toEqual([]);
    const keys = await withTenant(db, auth, (tx) => tx.query('SELECT key FROM runtime.idempotency_keys'));
    expect(keys.rows).toEqual([]);
    const retry = await run(auth, k, { text: 'boom' });
    expect(retry.replayed).toBe(false);
    expect(await effects(auth)).toEqual(['boom']);
  });

  it('runs the effect exactly once for concurrent requests with one key', async () => {
    const auth = authFor();
    const k = key();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 6 }, () => run(auth, k, { text: 'race' })),
    );
    const fresh = outcomes.filter((o) => o.status === 'fulfilled' && !o.value.replayed);
    expect(fresh).toHaveLength(1);
    for (const o of outcomes) {
      if (o.status === 'fulfilled') continue;
      expect(o.reason).toBeInstanceOf(AppError);
      expect((o.reason as AppError).code).toBe('IDEMPOTENCY_KEY_IN_PROGRESS');
    }
    expect(await effects(auth)).toEqual(['race']);
    // Whoever was told "in progress" gets the result on retry.
    expect((await run(auth, k, { text: 'race' })).replayed).toBe(true);
  });

  it.runIf(driver === 'postgres')(
    'answers IDEMPOTENCY_KEY_IN_PROGRESS (with retryAfterMs) while the first request holds the key',
    async () => {
      const auth = authFor();
      const k = key();
      const started = deferred();
      const release = deferred();
      const first = run(auth, k, { text: 'slow' }, async () => {
        started.resolve();
        await release.promise;
      });
      await started.promise;
      const e = await expectAppError(run(auth, k, { text: 'slow' }), 'IDEMPOTENCY_KEY_IN_PROGRESS');
      expect(e.extensions['retryAfterMs']).toBeGreaterThan(0);
      // A different key of the same principal is not held up.
      expect((await run(auth, key(), { text: 'other' })).replayed).toBe(false);
      release.resolve();
      expect((await first).replayed).toBe(false);
      expect((await run(auth, k, { text: 'slow' })).replayed).toBe(true);
      expect(await effects(auth)).toEqual(['slow', 'other']);
    },
  );

  it('scopes keys by tenant and principal (RLS hides the others)', async () => {
    const tenantA = randomUUID();
    const alice = authFor(tenantA, 'alice');
    const bob = authFor(tenantA, 'bob');
    const mallory = authFor(randomUUID(), 'alice');
    const k = key();
    for (const auth of [alice, bob, mallory]) {
      expect((await run(auth, k, { text: `by ${auth.principalId}` })).replayed).toBe(false);
    }
    expect(await effects(alice)).toEqual(['by alice', 'by bob']);
    expect(await effects(mallory)).toEqual(['by alice']);
    for (const auth of [alice, bob, mallory]) {
      const visible = await withTenant(db, auth, (tx) =>
        tx.query<{ tenant_id: string; principal_id: string }>(
          'SELECT tenant_id, principal_id FROM runtime.idempotency_keys',
        ),
      );
      expect(visible.rows.length).toBeGreaterThan(0);
      for (const row of visible.rows) {
        expect(row).toEqual({ tenant_id: auth.tenantId, principal_id: auth.principalId });
      }
    }
    // Outside a tenant transaction the app role sees no keys and no tenant rows at all.
    expect((await db.query('SELECT key FROM runtime.idempotency_keys')).rows).toEqual([]);
    expect((await db.query('SELECT id FROM fx.effects')).rows).toEqual([]);
    // Nor can it write a key for someone else.
    await expect(
      withTenant(db, alice, (tx) =>
        tx.query(
          `INSERT INTO runtime.idempotency_keys (tenant_id, principal_id, key, operation, fingerprint, response, expires_at)
           VALUES ($1, 'bob', 'forged-key', 'Mutation.post', 'f', '{}', now() + interval '1 day')`,
          [tenantA],
        ),
      ),
    ).rejects.toThrow(/row-level security/);
  });

  it('treats an expired key as unused, and purgeExpiredIdempotencyKeys removes expired keys only', async () => {
    const auth = authFor();
    const other = authFor();
    const expiredKey = key();
    const liveKey = key();
    const expired = (a: AuthContext, k: string, text: string) =>
      runIdempotent(db, a, { key: k, operation: 'Mutation.post', args: { text } }, -60, post(text));
    await expired(auth, expiredKey, 'old');
    await expired(other, key(), 'old elsewhere');
    await run(auth, liveKey, { text: 'live' });

    // Past its retention the key no longer replays: the request runs again (and stores a fresh, expired key).
    expect((await expired(auth, expiredKey, 'old')).replayed).toBe(false);
    expect(await effects(auth)).toEqual(['old', 'live', 'old']);

    expect(await purgeExpiredIdempotencyKeys(db, 1)).toBe(2); // batches of one: both tenants' expired keys
    expect(await purgeExpiredIdempotencyKeys(db)).toBe(0);
    const left = await withTenant(db, auth, (tx) =>
      tx.query<{ key: string }>('SELECT key FROM runtime.idempotency_keys'),
    );
    expect(left.rows.map((r) => r.key)).toEqual([liveKey]);
    expect((await run(auth, liveKey, { text: 'live' })).replayed).toBe(true);
  });

  describe('eraseIdempotentResponses (tenant-wide erase)', () => {
    const ERASED_AT = new Date('2031-02-03T04:05:06.789Z');
    const erase = (auth: AuthContext, operations: string[]) =>
      withTenant(db, auth, (tx) => eraseIdempotentResponses(tx, operations, ERASED_AT));
    const storedRow = async (auth: AuthContext, k: string) =>
      (
        await withTenant(db, auth, (tx) =>
          tx.query<{ response: unknown; fingerprint: string }>(
            'SELECT response, fingerprint FROM runtime.idempotency_keys WHERE key = $1',
            [k],
          ),
        )
      ).rows[0];

    it('tombstones the named operations of every principal of the tenant; a replay is NOT_FOUND and runs nothing', async () => {
      const tenantA = randomUUID();
      const alice = authFor(tenantA, 'alice');
      const bob = authFor(tenantA, 'bob');
      const mallory = authFor(randomUUID(), 'alice');
      const [ka, kb, kOther, km] = [key(), key(), key(), key()];
      await run(alice, ka, { text: 'secret of alice' });
      await run(bob, kb, { text: 'secret of bob' });
      const other = await runIdempotent(
        db,
        alice,
        { key: kOther, operation: 'Mutation.other', args: { text: 'kept' } },
        DAY,
        post('kept'),
      );
      const foreign = await run(mallory, km, { text: 'secret of mallory' });

      expect(await erase(bob, ['Mutation.post'])).toBe(2); // alice's and bob's, whoever erases
      expect(await erase(alice, ['Mutation.post'])).toBe(0); // tombstones are not counted again

      for (const [auth, k, text] of [
        [alice, ka, 'secret of alice'],
        [bob, kb, 'secret of bob'],
      ] as const) {
        expect(await storedRow(auth, k)).toEqual({
          response: { erased: true, erasedAt: ERASED_AT.toISOString() },
          fingerprint: 'erased',
        });
        const e = await expectAppError(run(auth, k, { text }), 'NOT_FOUND');
        expect(e.message).toMatch(/Mutation\.post.*removed by a tenant-wide erase.*new idempotency key/);
        expect(e.message).not.toContain('secret');
        expect(e.extensions).toMatchObject({
          idempotentResponseErased: true,
          erasedAt: ERASED_AT.toISOString(),
        });
        // The key is spent whatever the arguments: no second run, not even as "another request".
        await expectAppError(run(auth, k, { text: 'something else' }), 'NOT_FOUND');
      }
      expect(await effects(alice)).toEqual(['secret of alice', 'secret of bob', 'kept']);

      // Another operation of the tenant, and the other tenant, replay as before.
      const otherAgain = await runIdempotent(
        db,
        alice,
        { key: kOther, operation: 'Mutation.other', args: { text: 'kept' } },
        DAY,
        post('kept'),
      );
      expect(otherAgain).toEqual({ result: other.result, replayed: true });
      expect(await run(mallory, km, { text: 'secret of mallory' })).toEqual({
        result: foreign.result,
        replayed: true,
      });
      expect(await storedRow(mallory, km)).toMatchObject({ response: foreign.result });

      // A new key writes again.
      expect((await run(alice, key(), { text: 'secret of alice' })).replayed).toBe(false);
      expect(await effects(alice)).toEqual(['secret of alice', 'secret of bob', 'kept', 'secret of alice']);
    });

    it("leaves the erase's own response (stored after its effect, in the same transaction) replayable", async () => {
      const alice = authFor(randomUUID(), 'alice');
      const kPost = key();
      await run(alice, kPost, { text: 'to forget' });
      const kErase = key();
      const eraseRun = () =>
        runIdempotent(db, alice, { key: kErase, operation: 'Mutation.erase', args: {} }, DAY, (tx) =>
          eraseIdempotentResponses(tx, ['Mutation.post', 'Mutation.erase'], ERASED_AT),
        );
      expect(await eraseRun()).toEqual({ result: 1, replayed: false });
      expect(await eraseRun()).toEqual({ result: 1, replayed: true });
      await expectAppError(run(alice, kPost, { text: 'to forget' }), 'NOT_FOUND');
    });

    it('an expired tombstone is an unused key, like any expired key', async () => {
      const alice = authFor();
      const k = key();
      await runIdempotent(
        db,
        alice,
        { key: k, operation: 'Mutation.post', args: { text: 'a' } },
        -60,
        post('a'),
      );
      expect(await erase(alice, ['Mutation.post'])).toBe(1);
      expect((await run(alice, k, { text: 'a' })).replayed).toBe(false);
      expect(await effects(alice)).toEqual(['a', 'a']);
    });

    it('refuses to run outside a tenant transaction, and names an operation that is not "Mutation.field"', async () => {
      await expect(db.transaction((tx) => eraseIdempotentResponses(tx, ['Mutation.post']))).rejects.toThrow(
        /needs the tenant of the transaction/,
      );
      await expect(erase(authFor(), ['putMemory'])).rejects.toThrow(/"putMemory" is not an operation/);
      expect(await erase(authFor(), [])).toBe(0);
      // The app role cannot do it by hand: it has no UPDATE on the table.
      await expect(
        withTenant(db, authFor(), (tx) => tx.query(`UPDATE runtime.idempotency_keys SET fingerprint = 'x'`)),
      ).rejects.toThrow(/permission denied/);
    });
  });

  it('idempotentMutation needs a token and marks replays in the response extensions', async () => {
    const ctxFor = (auth: AuthContext | null) =>
      ({ auth, db, config: t.config, responseExtensions: {} }) as unknown as SubgraphContext;
    const effect = async (tx: Queryable, a: AuthContext) => {
      await tx.query('INSERT INTO fx.effects (note) VALUES ($1)', [`mutation by ${a.principalId}`]);
      return { ok: true };
    };
    const args = { idempotencyKey: key(), text: 'm' };
    await expectAppError(idempotentMutation(ctxFor(null), 'Mutation.post', args, effect), 'UNAUTHENTICATED');
    const auth = authFor();
    const first = ctxFor(auth);
    expect(await idempotentMutation(first, 'Mutation.post', args, effect)).toEqual({ ok: true });
    expect(first.responseExtensions).toEqual({});
    const second = ctxFor(auth);
    expect(await idempotentMutation(second, 'Mutation.post', args, effect)).toEqual({ ok: true });
    expect(second.responseExtensions).toEqual({ idempotentReplay: true });
    // The key itself is not part of the fingerprint: only the other arguments are.
    await expectAppError(
      idempotentMutation(ctxFor(auth), 'Mutation.post', { ...args, text: 'other' }, effect),
      'IDEMPOTENCY_KEY_REUSED',
    );
    expect(await effects(auth)).toEqual(['mutation by user-1']);
  });
});
