/** Intent verification on Node: everything in index.ts plus the SQLite replay cache. */
export * from './index.js';
export { SqliteReplayCache } from './replay-cache.node.js';
