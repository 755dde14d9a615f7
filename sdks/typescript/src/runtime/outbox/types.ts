/**
 * The outbox's data: entries, their states, and the store interface. Browser-safe (no Node imports): the SQLite
 * store is in sqlite-store.node.ts and a browser build simply leaves it out.
 *
 * States and moves (anything else is refused by the store):
 *
 *   QUEUED ──send──► SENDING ──ok──► SENT
 *     ▲                 │ ├──retryable error──► RETRYABLE ──due──► SENDING
 *     └──crash/stop─────┘ ├──other error──────► POISON (dead letter)
 *                         └──the maxFailedDeliveries-th failed delivery──► POISON
 *   QUEUED / RETRYABLE ──expiresAt passed──► EXPIRED
 *   POISON / EXPIRED ──revive──► QUEUED (failedDeliveries back to 0)
 */

export type OutboxState = 'QUEUED' | 'SENDING' | 'RETRYABLE' | 'SENT' | 'POISON' | 'EXPIRED';

/** States that still hold their room's line (the head of a room is its oldest entry in one of these). */
export const PENDING_STATES: readonly OutboxState[] = ['QUEUED', 'SENDING', 'RETRYABLE'];

/** The error that moved an entry to RETRYABLE or POISON: code and message only (never variables or tokens). */
export interface OutboxErrorInfo {
  code: string;
  message: string;
}

export interface OutboxEntry {
  /** Unique id (made at enqueue). */
  id: string;
  /** Enqueue order, strictly increasing: orders entries within a room. */
  seq: number;
  /** The ordering key: entries of one room are sent one at a time, oldest first. */
  room: string;
  /** Operation name, as the send function understands it (e.g. a generated method's operation name). */
  operation: string;
  /** The operation's variables (JSON). */
  variables: Record<string, unknown>;
  /** Made once at enqueue, persisted, and sent on every attempt, including after a restart. */
  idempotencyKey: string;
  state: OutboxState;
  /** Sends started so far (each one may itself be several HTTP attempts inside the client). */
  attempts: number;
  /**
   * Sends the server took and failed on (INTERNAL_SERVER_ERROR or HTTP 500; see failure.ts). At the outbox's
   * `maxFailedDeliveries` (default 3) the entry goes to POISON. Reset to 0 by revive.
   */
  failedDeliveries: number;
  /** RETRYABLE: not before this time (epoch ms). */
  nextAttemptAt: number | null;
  lastError: OutboxErrorInfo | null;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
  /** After this time a QUEUED or RETRYABLE entry becomes EXPIRED (createdAt + TTL, 7 days by default). */
  expiresAt: number;
  /** When the first send started (null before). */
  firstAttemptAt: number | null;
}

export interface NewOutboxEntry {
  id: string;
  room: string;
  operation: string;
  variables: Record<string, unknown>;
  idempotencyKey: string;
  createdAt: number;
  expiresAt: number;
}

export interface OutboxFilter {
  state?: OutboxState | readonly OutboxState[];
  room?: string;
}

/** How a failed send is recorded. */
export interface FailureRecord {
  /** The server took the message and failed on it (counts toward the poison limit). Default false. */
  failedDelivery?: boolean;
}

/**
 * Durable storage of outbox entries. Every method is one transaction; a move whose entry is not in an allowed
 * state throws OutboxStateError (so two workers can never both send the same entry).
 */
export interface OutboxStore {
  add(entry: NewOutboxEntry): Promise<OutboxEntry>;
  get(id: string): Promise<OutboxEntry | null>;
  /** Entries in enqueue order. */
  list(filter?: OutboxFilter): Promise<OutboxEntry[]>;
  /** The head of every room that has a pending entry (QUEUED, SENDING or RETRYABLE), in enqueue order. */
  heads(): Promise<OutboxEntry[]>;
  /** Crash recovery: every SENDING entry back to QUEUED (key unchanged). Returns how many moved. */
  recover(now: number): Promise<number>;
  /** QUEUED/RETRYABLE entries with expiresAt <= now → EXPIRED. Returns the expired entries. */
  expire(now: number): Promise<OutboxEntry[]>;
  /** QUEUED/RETRYABLE → SENDING, attempts + 1. */
  markSending(id: string, now: number): Promise<OutboxEntry>;
  /** SENDING → SENT. */
  markSent(id: string, now: number): Promise<OutboxEntry>;
  /** SENDING → RETRYABLE with the time of the next attempt; `failedDelivery` adds one to failedDeliveries. */
  markRetryable(
    id: string,
    now: number,
    nextAttemptAt: number,
    error: OutboxErrorInfo,
    options?: FailureRecord,
  ): Promise<OutboxEntry>;
  /** SENDING → POISON; `failedDelivery` adds one to failedDeliveries (the send that reached the limit). */
  markPoison(id: string, now: number, error: OutboxErrorInfo, options?: FailureRecord): Promise<OutboxEntry>;
  /** QUEUED/RETRYABLE → EXPIRED for one entry, with the reason (e.g. the server's key retention passed). */
  markExpired(id: string, now: number, error: OutboxErrorInfo): Promise<OutboxEntry>;
  /** SENDING → QUEUED (the send was stopped by the outbox itself, not failed). */
  requeue(id: string, now: number): Promise<OutboxEntry>;
  /**
   * POISON or EXPIRED → QUEUED with a fresh TTL, no error and failedDeliveries 0, for an application that fixed
   * the cause.
   */
  revive(id: string, now: number, expiresAt: number): Promise<OutboxEntry>;
  /** Deletes SENT, POISON and EXPIRED entries last updated before `before`. Returns how many. */
  purge(before: number, states?: readonly OutboxState[]): Promise<number>;
  close(): Promise<void>;
}

/** A move the state machine does not allow (the entry is missing or in another state). */
export class OutboxStateError extends Error {
  constructor(
    readonly id: string,
    readonly wanted: string,
    readonly actual: OutboxState | null,
  ) {
    super(
      actual === null
        ? `Outbox entry ${id} does not exist (wanted: ${wanted}).`
        : `Outbox entry ${id} is ${actual}; ${wanted} is not allowed from there.`,
    );
    this.name = 'OutboxStateError';
  }
}
