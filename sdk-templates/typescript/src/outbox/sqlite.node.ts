/**
 * Opening the SQLite file behind the outbox, the inbox and the intent replay cache (better-sqlite3 v12, Node only).
 * WAL journal, synchronous=FULL by default (a committed change survives a power cut, not only a crash), and, when
 * the store opens the file itself, an exclusive lock held while it is open: one process owns the file, and a second
 * one fails at once with a clear error instead of "recovering" entries the first is still sending.
 *
 * better-sqlite3 is an optional dependency (a native module), loaded on the first open: an app that never opens a
 * SQLite store runs without it, and one that does gets an error saying what to install.
 */
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';

export type SqliteDatabase = Database.Database;
export type SqliteStatement = Database.Statement<unknown[]>;

export interface SqliteOpenOptions {
  /** FULL (default): durable across power loss. NORMAL: durable across process crashes only, faster. */
  synchronous?: 'FULL' | 'NORMAL';
  /** Hold an exclusive lock on the file while open (default true; only when given a path). */
  exclusive?: boolean;
  /** How long to wait for a lock (ms, default 1000). */
  busyTimeoutMs?: number;
}

export interface OpenedSqlite {
  db: SqliteDatabase;
  /** True when we opened the file (and close it); false for a Database the caller handed in. */
  owned: boolean;
}

/** The file is locked by another connection (another process owns it). */
export class SqliteBusyError extends Error {
  constructor(file: string, cause: unknown) {
    super(
      `The SQLite file ${file} is in use by another process (it holds the file's exclusive lock). One process ` +
        `owns an outbox/inbox file: stop the other one, or give this process its own file.`,
      { cause },
    );
    this.name = 'SqliteBusyError';
  }
}

type DatabaseConstructor = new (file: string, options: { timeout: number }) => SqliteDatabase;
let loaded: DatabaseConstructor | undefined;

/** better-sqlite3's Database class, loaded once (it is CommonJS and native, hence require). */
function databaseClass(): DatabaseConstructor {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
  } catch (error) {
    throw new Error(
      'The SQLite stores (outbox, inbox, intent replay cache) need better-sqlite3, an optional dependency that is ' +
        'not installed here (or failed to build). Install it next to the SDK: npm install better-sqlite3',
      { cause: error },
    );
  }
  return loaded;
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/** Opens (or adopts) a database and applies the pragmas. `target` is a path, ':memory:', or an open Database. */
export function openSqlite(target: string | SqliteDatabase, options: SqliteOpenOptions = {}): OpenedSqlite {
  const owned = typeof target === 'string';
  const db = owned ? new (databaseClass())(target, { timeout: options.busyTimeoutMs ?? 1000 }) : target;
  try {
    if (owned && (options.exclusive ?? true)) db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    db.pragma('foreign_keys = ON');
    // Take the write lock now (in exclusive mode it is then kept until close).
    db.exec('BEGIN IMMEDIATE; COMMIT');
  } catch (error) {
    if (owned) db.close();
    if (isBusy(error)) throw new SqliteBusyError(db.name, error);
    throw error;
  }
  return { db, owned };
}

/** Applies numbered migrations once, tracked per component in a small table (several stores share one file). */
export function migrate(db: SqliteDatabase, component: string, steps: readonly string[]): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS agentgraph_sdk_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)',
  );
  const row = db.prepare('SELECT version FROM agentgraph_sdk_schema WHERE component = ?').get(component) as
    { version: number } | undefined;
  const current = row?.version ?? 0;
  if (current > steps.length) {
    throw new Error(
      `The ${component} tables are at schema version ${current}, newer than this SDK knows (${steps.length}). ` +
        `Upgrade the SDK or use another file.`,
    );
  }
  db.transaction(() => {
    for (let version = current + 1; version <= steps.length; version++) db.exec(steps[version - 1]!);
    db.prepare(
      'INSERT INTO agentgraph_sdk_schema (component, version) VALUES (?, ?) ' +
        'ON CONFLICT (component) DO UPDATE SET version = excluded.version',
    ).run(component, steps.length);
  })();
}

/**
 * `SELECT * FROM <table> [WHERE state IN (…) AND <column> = ?] ORDER BY <order>` for the stores' list filters:
 * `state` is one state or several; `equals` holds optional column = value conditions (undefined values are skipped).
 */
export function listQuery(
  table: string,
  order: string,
  state: string | readonly string[] | undefined,
  equals: Record<string, unknown> = {},
): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (state !== undefined) {
    const states = typeof state === 'string' ? [state] : state;
    where.push(`state IN (${states.map(() => '?').join(', ')})`);
    params.push(...states);
  }
  for (const [column, value] of Object.entries(equals)) {
    if (value === undefined) continue;
    where.push(`${column} = ?`);
    params.push(value);
  }
  return {
    sql: `SELECT * FROM ${table} ${where.length ? `WHERE ${where.join(' AND ')} ` : ''}ORDER BY ${order}`,
    params,
  };
}
