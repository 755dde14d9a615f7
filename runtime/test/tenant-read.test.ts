import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../src/db/types.js';
import { tenantRead } from '../src/tenant-read.js';
import { drivers, openTestDatabase, type TestDb } from './helpers.js';

describe.each(drivers)('tenantRead on %s', (driver) => {
  let t: TestDb;
  let transactions = 0;
  let db: Database;
  const auth = { tenantId: randomUUID(), principalId: 'u1', role: 'VIEWER' as const, scopes: [] };

  beforeAll(async () => {
    t = await openTestDatabase(driver);
    const inner = t.db;
    db = {
      ...inner,
      transaction: (fn, settings) => {
        transactions++;
        return inner.transaction(fn, settings);
      },
    };
  });
  afterAll(() => t.close());

  const tenantOf = (tx: Queryable) =>
    tx.query<{ t: string }>('SELECT runtime.current_tenant()::text AS t').then((r) => r.rows[0]!.t);

  it('runs the reads of one turn in one tenant transaction, each getting its own result', async () => {
    const ctx = { db, auth };
    transactions = 0;
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => tenantRead(ctx, async (tx) => `${n}:${await tenantOf(tx)}`)),
    );
    expect(results).toEqual([1, 2, 3, 4, 5].map((n) => `${n}:${auth.tenantId}`));
    expect(transactions).toBe(1);
  });

  it('fails only the read that threw (even by an SQL error) and runs the ones after it again', async () => {
    const ctx = { db, auth };
    transactions = 0;
    const settled = await Promise.allSettled([
      tenantRead(ctx, async () => 'a'),
      tenantRead(ctx, (tx) => tx.query('SELECT * FROM no_such_table')),
      tenantRead(ctx, async (tx) => tenantOf(tx)),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[2] as PromiseFulfilledResult<string>).value).toBe(auth.tenantId);
    expect(transactions).toBe(2);
  });

  it('keeps requests apart: each context gets its own transaction and tenant', async () => {
    const other = { ...auth, tenantId: randomUUID() };
    transactions = 0;
    const [a, b] = await Promise.all([
      tenantRead({ db, auth }, tenantOf),
      tenantRead({ db, auth: other }, tenantOf),
    ]);
    expect([a, b]).toEqual([auth.tenantId, other.tenantId]);
    expect(transactions).toBe(2);
  });
});
