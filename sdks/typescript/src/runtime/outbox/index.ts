/** The outbox, browser-safe part (the SQLite store is in index.node.ts). */
export { Outbox, DEFAULT_OUTBOX_TTL_MS, DEFAULT_MAX_FAILED_DELIVERIES } from './outbox.js';
export type { OutboxOptions, OutboxSend, EnqueueInput, OutboxCounters, DeadLetterExport } from './outbox.js';
export { defaultOutboxDelay, exponentialOutboxDelay, describeFailure, isFailedDelivery } from './failure.js';
export { sendWithClient, type OutboxOperations } from './client-send.js';
export type { OutboxDelay, SendFailure } from './failure.js';
export { OutboxStateError, PENDING_STATES } from './types.js';
export type {
  OutboxEntry,
  OutboxErrorInfo,
  OutboxFilter,
  OutboxState,
  OutboxStore,
  NewOutboxEntry,
  FailureRecord,
} from './types.js';
