/**
 * Embedded driver: PGlite (PostgreSQL compiled to WASM) in this process, data in a folder (or in memory).
 * One connection: statements and transactions are serialised by PGlite itself; NOTIFY is delivered in-process.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import type { Database, DatabaseHandle, Queryable, QueryResult } from './types.js';
import { assertChannel, assertSettingNames } from './types.js';
import { serviceRole, type Service } from './service-roles.js';

function wrap(q: { query: PGlite['query'] }): Queryable {
  return {
    async query<Row>(sql: string, params: unknown[] = []): Promise<QueryResult<Row>> {
      const r = await q.query<Row>(sql, params);
      // PGlite reports affectedRows = 0 for a SELECT; pg's rowCount is the number of rows returned.
      return { rows: r.rows, rowCount: r.rows.length || (r.affectedRows ?? 0) };
    },
  };
}

/**
 * PGlite keeps no lock of its own, and two processes on one folder corrupt it: take an exclusive lock file
 * holding our pid. A lock whose process is gone (a crash) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, 'agentgraph.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(file, 'utf8').trim());
      let alive = false;
      try {
        if (Number.isInteger(pid) && pid > 0) {
          process.kill(pid, 0);
          alive = true;
        }
      } catch (e) {
        alive = (e as NodeJS.ErrnoException).code === 'EPERM';
      }
      if (alive) {
        throw new Error(
          `The embedded database at ${dataDir} is in use by process ${pid}${pid === process.pid ? ' (this one)' : ''}. Stop it first (one process per ` +
            'data folder), or point DATA_DIR elsewhere.',
        );
      }
      rmSync(file, { force: true });
    }
  }
  throw new Error(`Could not lock ${file}; remove it if no agentgraph process is running.`);
}

/** The embedded database's handle; `dump()` is its data folder as a tar (a template for in-memory databases). */
export interface PgliteHandle extends DatabaseHandle {
  dump(): Promise<Uint8Array>;
}

/**
 * Opens PGlite on `dataDir`, or in memory when null; `template` (a `dump()` of another one) starts an in-memory
 * database as a copy of it instead of an empty cluster.
 */
export async function openPglite(
  dataDir: string | null,
  appRole: string,
  template?: Uint8Array,
): Promise<PgliteHandle> {
  let unlock = () => undefined as void;
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    unlock = lockDataDir(dataDir);
  }
  let pg: PGlite;
  try {
    // pgvector (the `vector` extension) is loaded into every PGlite, so `CREATE EXTENSION vector` works here; the
    // migrations create it where it is available (memory's HNSW search path), PostgreSQL without it scans exactly.
    pg = await PGlite.create(dataDir ?? 'memory://', {
      extensions: { vector },
      ...(template && !dataDir ? { loadDataDir: new Blob([template as Uint8Array<ArrayBuffer>]) } : {}),
    });
  } catch (err) {
    unlock();
    throw err;
  }
  const closeOnce = async () => {
    if (!pg.closed) await pg.close();
    unlock();
  };
  const base = wrap(pg);
  /** `role`: the transaction runs as that role (SET LOCAL ROLE, sent with the settings in one statement). */
  const transactionAs =
    (role: string | null): Database['transaction'] =>
    (fn, settings) =>
      pg.transaction(async (tx) => {
        if (settings) assertSettingNames(settings);
        const all = { ...(role ? { role } : {}), ...settings };
        const names = Object.keys(all);
        if (names.length > 0) {
          await tx.query(
            `SELECT ${names.map((n, i) => `set_config('${n}', $${i + 1}, true)`).join(', ')}`,
            Object.values(all),
          );
        }
        return fn(wrap(tx));
      });
  const transaction = transactionAs(null);
  // One session serves both: once app() ran, the session's role is the app role, so an owner transaction takes
  // the session user's (owner's) role back for its own duration only (SET LOCAL ends with the transaction).
  const ownerTransaction: Database['transaction'] = (fn, settings) =>
    transaction(async (tx) => {
      if (app) await tx.query('SET LOCAL ROLE NONE');
      return fn(tx);
    }, settings);
  let app: Database | null = null;
  const views = new Map<string, Database>();
  const listen: Database['listen'] = async (channel, onNotify) => {
    assertChannel(channel);
    const unsub = await pg.listen(channel, onNotify);
    return async () => {
      await unsub();
    };
  };
  const ping = async () => {
    await pg.query('select 1');
  };
  const appDb = async (): Promise<Database> => {
    if (app) return app;
    await pg.exec(`SET ROLE ${appRole}`);
    app = { driver: 'pglite', ...base, transaction, listen, ping, close: closeOnce };
    return app;
  };
  /**
   * A service's view of the one session (the session's own role stays the app role): every statement runs in a
   * transaction that takes the service's role for itself (`set_config('role', …, true)`, i.e. SET LOCAL ROLE), so
   * the grants of that role, and only those, apply, as on a server where the service logs in as its role.
   */
  const serviceDb = (service: Service): Database => {
    const role = serviceRole(appRole, service);
    const inRole = transactionAs(role);
    return {
      driver: 'pglite',
      async query(sql, params) {
        return inRole((tx) => tx.query(sql, params));
      },
      transaction: inRole,
      listen,
      ping,
      close: closeOnce,
    };
  };
  return {
    // Once the session took the app role, an owner statement runs in an owner transaction of its own.
    owner: {
      query: (sql, params) =>
        app ? ownerTransaction((tx) => tx.query(sql, params)) : base.query(sql, params),
      transaction: ownerTransaction,
    },
    async app(service) {
      await appDb();
      if (!service) return app!;
      let view = views.get(service);
      if (!view) views.set(service, (view = serviceDb(service)));
      return view;
    },
    close: closeOnce,
    async dump() {
      const tar = await pg.dumpDataDir('none');
      return new Uint8Array(await tar.arrayBuffer());
    },
  };
}
