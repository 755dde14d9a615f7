/** The inbox, browser-safe part (the SQLite store is in index.node.ts). */
export { Inbox, acknowledgementOf, DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS } from './inbox.js';
export type { InboxOptions, Lease, Acknowledgement, FailResult, ProcessResult } from './inbox.js';
export { LeaseLostError } from './types.js';
export type {
  InboxState,
  InboxErrorInfo,
  IncomingMessage,
  InboxMessage,
  StreamCursor,
  InboxFilter,
  InboxStore,
} from './types.js';
