/**
 * The PostgreSQL driver sends statements with parameters as named (prepared) statements, so a connection parses
 * and plans a text once; statements without parameters keep the simple protocol, where several may go in one
 * round trip (BEGIN with the transaction's settings). PostgreSQL only: PGlite has no protocol.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDb } from './helpers.js';

const onPostgres = Boolean(process.env['DATABASE_URL']);

describe.runIf(onPostgres)('PostgreSQL statements', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDatabase('postgres');
  });
  afterAll(() => t?.close());

  it('prepares a parameterised text once per connection and reuses it', async () => {
    const text = 'SELECT $1::int + 1 AS n /* postgres-statements test */';
    const prepared = await t.db.transaction(async (tx) => {
      for (let i = 0; i < 3; i++) expect((await tx.query<{ n: number }>(text, [i])).rows[0]!.n).toBe(i + 1);
      const r = await tx.query<{ statement: string }>(
        "SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%postgres-statements test%'",
      );
      return r.rows.map((row) => row.statement);
    });
    expect(prepared).toEqual([text]);
  });

  it('keeps several statements in one round trip when there are no parameters, and settings apply', async () => {
    const r = await t.db.transaction(
      (tx) => tx.query<{ t: string }>("SELECT current_setting('app.tenant_id', true) AS t"),
      { 'app.tenant_id': '00000000-0000-4000-8000-000000000001' },
    );
    expect(r.rows[0]!.t).toBe('00000000-0000-4000-8000-000000000001');
  });
});
