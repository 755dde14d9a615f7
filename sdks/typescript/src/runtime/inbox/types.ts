/**
 * The inbox's data and store interface. Browser-safe (no Node imports); the SQLite store is
 * sqlite-store.node.ts.
 *
 * A message moves: AVAILABLE ──lease──► LEASED ──complete──► PROCESSED
 *                                         │ ├──fail (attempts < max)──► AVAILABLE
 *                                         │ └──fail (attempts = max)──► QUARANTINED
 *                                         └──lease expired──► leasable again (counts as an attempt; at max → QUARANTINED)
 * PROCESSED and QUARANTINED messages carry an acknowledgement for the server until the app marks it delivered.
 */

export type InboxState = 'AVAILABLE' | 'LEASED' | 'PROCESSED' | 'QUARANTINED';

export interface InboxErrorInfo {
  code: string;
  message: string;
}

/** A message as a stream delivered it. */
export interface IncomingMessage {
  /** The stream it came from (e.g. `intents:<deviceId>`): cursors and dedupe are per stream. */
  stream: string;
  /** Unique within the stream (e.g. the intent id). */
  id: string;
  /** Position in the stream, when it has one: a message at or below the stream's last seq is a duplicate. */
  seq?: number;
  /** The resume cursor after this message (default: String(seq) when seq is given). */
  cursor?: string;
  /** JSON payload. */
  payload: unknown;
}

export interface InboxMessage {
  stream: string;
  id: string;
  seq: number | null;
  payload: unknown;
  state: InboxState;
  /** Leases taken so far (each one a processing attempt). */
  attempts: number;
  /** AVAILABLE: not leased before this time (a retry delay). */
  availableAt: number;
  leaseToken: string | null;
  leaseUntil: number | null;
  lastError: InboxErrorInfo | null;
  receivedAt: number;
  settledAt: number | null;
  /** When the app confirmed it delivered the acknowledgement to the server (null: still to deliver). */
  acknowledgedAt: number | null;
}

export interface StreamCursor {
  stream: string;
  cursor: string | null;
  lastSeq: number | null;
}

export interface InboxFilter {
  state?: InboxState | readonly InboxState[];
  stream?: string;
}

export interface InboxStore {
  cursor(stream: string): Promise<StreamCursor | null>;
  saveCursor(stream: string, cursor: string, now: number): Promise<void>;
  /**
   * Stores the message unless it is a duplicate (same id in the stream, or seq ≤ the stream's last seq), and
   * advances the stream's cursor, in one transaction.
   */
  receive(message: IncomingMessage, now: number): Promise<'accepted' | 'duplicate'>;
  /**
   * In one transaction: quarantines messages whose lease expired after `maxAttempts` leases (the processor died
   * every time), then leases the oldest leasable message (AVAILABLE and due, or LEASED with an expired lease):
   * attempts + 1, a new token, leaseUntil = now + leaseMs.
   */
  lease(
    now: number,
    leaseMs: number,
    token: string,
    maxAttempts: number,
    stream?: string,
  ): Promise<{ leased: InboxMessage | null; quarantined: InboxMessage[] }>;
  /** LEASED with this token → PROCESSED. */
  complete(stream: string, id: string, token: string, now: number): Promise<InboxMessage>;
  /** LEASED with this token → AVAILABLE (from `availableAt`) or, with `quarantine`, QUARANTINED. */
  fail(
    stream: string,
    id: string,
    token: string,
    now: number,
    error: InboxErrorInfo,
    outcome: { quarantine: true } | { quarantine: false; availableAt: number },
  ): Promise<InboxMessage>;
  /** PROCESSED and QUARANTINED messages whose acknowledgement is not delivered yet, oldest first. */
  unacknowledged(): Promise<InboxMessage[]>;
  markAcknowledged(stream: string, id: string, now: number): Promise<void>;
  get(stream: string, id: string): Promise<InboxMessage | null>;
  list(filter?: InboxFilter): Promise<InboxMessage[]>;
  /** Deletes acknowledged messages settled before `before` (seq dedupe still holds through the cursor). */
  purge(before: number): Promise<number>;
  close(): Promise<void>;
}

/** complete()/fail() with a lease that is no longer the message's lease (it expired and was leased again). */
export class LeaseLostError extends Error {
  constructor(
    readonly stream: string,
    readonly id: string,
  ) {
    super(
      `The lease on inbox message ${stream}/${id} was lost (it expired and the message was leased again, or it ` +
        `was already settled); this result was not recorded. Keep processing within the lease (60 s by default).`,
    );
    this.name = 'LeaseLostError';
  }
}
