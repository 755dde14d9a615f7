/** The inbox on Node: everything in index.ts plus the better-sqlite3 store. */
export * from './index.js';
export { SqliteInboxStore, type SqliteInboxStoreOptions } from './sqlite-store.node.js';
