/** The outbox on Node: everything in index.ts plus the better-sqlite3 store. */
export * from './index.js';
export { SqliteOutboxStore, type SqliteOutboxStoreOptions } from './sqlite-store.node.js';
export { openSqlite, SqliteBusyError, type SqliteDatabase, type SqliteOpenOptions } from './sqlite.node.js';
