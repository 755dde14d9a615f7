/**
 * The SDK on Node: everything in index.ts plus the better-sqlite3 stores of the outbox, the inbox and the intent
 * replay cache (durable across restarts). Browsers import index.ts, which has no node: imports.
 */
export * from './index.js';
export { SqliteOutboxStore, type SqliteOutboxStoreOptions } from './outbox/sqlite-store.node.js';
export {
  openSqlite,
  SqliteBusyError,
  type SqliteDatabase,
  type SqliteOpenOptions,
} from './outbox/sqlite.node.js';
export { SqliteInboxStore, type SqliteInboxStoreOptions } from './inbox/sqlite-store.node.js';
export { SqliteReplayCache } from './intents/replay-cache.node.js';
