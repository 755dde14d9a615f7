/**
 * Embedded driver: PGlite (PostgreSQL compiled to WASM) in this process, data in a folder (or in memory).
 * One connection: statements and transactions are serialised by PGlite itself; NOTIFY is delivered in-process.
 */
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import type { Database, DatabaseHandle, Queryable, QueryResult } from './types.js';
import { assertChannel } from './types.js';

function wrap(q: { query: PGlite['query'] }): Queryable {
  return {
    async query<Row>(sql: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      const r = await q.query<Row>(sql, params);
      // PGlite reports affectedRows = 0 for a SELECT; pg's rowCount is the number of rows returned.
      return { rows: r.rows, rowCount: r.rows.length || (r.affectedRows ?? 0) };
    },
  };
}

export async function openPglite(dataDir: string | null, appRole: string): Promise<DatabaseHandle> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const pg = await PGlite.create(dataDir ?? 'memory://');
  const base = wrap(pg);
  const transaction: Database['transaction'] = (fn) => pg.transaction((tx) => fn(wrap(tx)));
  let app: Database | null = null;
  return {
    owner: { ...base, transaction },
    async app() {
      if (app) return app;
      await pg.exec(`SET ROLE ${appRole}`);
      app = {
        driver: 'pglite',
        ...base,
        transaction,
        async listen(channel, onNotify) {
          assertChannel(channel);
          const unsub = await pg.listen(channel, onNotify);
          return async () => {
            await unsub();
          };
        },
        async ping() {
          await pg.query('select 1');
        },
        close: () => pg.close(),
      };
      return app;
    },
    close: () => pg.close(),
  };
}
