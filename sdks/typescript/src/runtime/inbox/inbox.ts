/**
 * The inbox: what a device receives from a stream, processed at most once per message and acknowledged.
 *
 * - `receive` stores a message and advances the stream's cursor in one transaction; a message seen before (same
 *   id, or a seq at or below the stream's last one) is a duplicate and is dropped. Reconnect with `cursor(stream)`.
 * - `lease` hands out the oldest available message for `leaseMs` (60 s). A lease that expires (the processor died
 *   or hung) makes the message available again; every lease counts as an attempt.
 * - `complete` → PROCESSED; `fail` → available again, or QUARANTINED after `maxAttempts` (3) attempts. Both give an
 *   acknowledgement (`PROCESSED`, or the terminal `QUARANTINED`) that the app delivers to the server, then
 *   confirms with `acknowledged`; `pendingAcknowledgements` lists those not confirmed yet (after a restart, too).
 *
 * Browser-safe: it only talks to an InboxStore (SqliteInboxStore on Node).
 */
import { systemClock, type Clock } from '../clock.js';
import {
  LeaseLostError,
  type InboxErrorInfo,
  type InboxMessage,
  type InboxStore,
  type IncomingMessage,
} from './types.js';

export const DEFAULT_LEASE_MS = 60_000;
export const DEFAULT_MAX_ATTEMPTS = 3;

export interface InboxOptions {
  store: InboxStore;
  clock?: Pick<Clock, 'now'>;
  /** How long a lease lasts (default 60 s). */
  leaseMs?: number;
  /** Processing attempts before a message is quarantined (default 3). */
  maxAttempts?: number;
  /** Delay before a failed message may be leased again (default: none). */
  retryDelayMs?: (attempt: number) => number;
  /** Lease tokens (default crypto.randomUUID). */
  newToken?: () => string;
}

/** A message handed out for processing. Pass it back to complete() or fail(). */
export interface Lease {
  stream: string;
  id: string;
  seq: number | null;
  payload: unknown;
  /** 1 for the first lease of this message. */
  attempt: number;
  token: string;
  leaseUntil: number;
}

/** What the app tells the server about a message it settled. */
export interface Acknowledgement {
  stream: string;
  id: string;
  seq: number | null;
  /** PROCESSED, or the terminal QUARANTINED (the message will not be processed: do not send it again). */
  outcome: 'PROCESSED' | 'QUARANTINED';
  error?: InboxErrorInfo;
  /** When it was settled (epoch ms). */
  at: number;
}

export type FailResult =
  | { outcome: 'RETRY'; attempts: number; availableAt: number }
  | { outcome: 'QUARANTINED'; acknowledgement: Acknowledgement };

export type ProcessResult =
  | { outcome: 'PROCESSED'; acknowledgement: Acknowledgement }
  | { outcome: 'RETRY'; attempts: number; availableAt: number; error: InboxErrorInfo }
  | { outcome: 'QUARANTINED'; acknowledgement: Acknowledgement }
  /** The lease expired while the handler ran and another worker leased the message: nothing was recorded. */
  | { outcome: 'LEASE_LOST' };

export function acknowledgementOf(message: InboxMessage): Acknowledgement {
  if (message.state !== 'PROCESSED' && message.state !== 'QUARANTINED') {
    throw new Error(`Inbox message ${message.stream}/${message.id} is ${message.state}, not settled.`);
  }
  const ack: Acknowledgement = {
    stream: message.stream,
    id: message.id,
    seq: message.seq,
    outcome: message.state,
    at: message.settledAt ?? message.receivedAt,
  };
  if (message.state === 'QUARANTINED' && message.lastError) ack.error = message.lastError;
  return ack;
}

function errorInfo(error: unknown): InboxErrorInfo {
  const e = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const message = typeof e.message === 'string' ? e.message : String(error);
  return {
    code: typeof e.code === 'string' && e.code ? e.code : 'PROCESSING_FAILED',
    message: message.length > 500 ? `${message.slice(0, 500)}…` : message,
  };
}

function requireText(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`Inbox.receive: ${name} must be a non-empty string.`);
  }
  return value;
}

export class Inbox {
  private readonly store: InboxStore;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly leaseMs: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly newToken: () => string;

  constructor(options: InboxOptions) {
    this.store = options.store;
    this.clock = options.clock ?? systemClock;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.retryDelayMs = options.retryDelayMs ?? (() => 0);
    this.newToken = options.newToken ?? (() => globalThis.crypto.randomUUID());
    if (!(this.leaseMs > 0)) throw new TypeError('Inbox: leaseMs must be positive.');
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new TypeError('Inbox: maxAttempts must be a positive integer.');
    }
  }

  /** The stream's resume cursor (null before its first message). */
  async cursor(stream: string): Promise<string | null> {
    return (await this.store.cursor(stream))?.cursor ?? null;
  }

  /** Records a cursor that came without a message (e.g. a heartbeat carrying the stream position). */
  saveCursor(stream: string, cursor: string): Promise<void> {
    return this.store.saveCursor(requireText(stream, 'stream'), cursor, this.clock.now());
  }

  /** Stores a delivered message; `duplicate` when it was seen before (then nothing changes). */
  receive(message: IncomingMessage): Promise<'accepted' | 'duplicate'> {
    requireText(message.stream, 'stream');
    requireText(message.id, 'id');
    if (message.seq !== undefined && !(Number.isSafeInteger(message.seq) && message.seq >= 0)) {
      throw new TypeError('Inbox.receive: seq must be a non-negative integer.');
    }
    if (message.payload === undefined) throw new TypeError('Inbox.receive: payload is missing.');
    return this.store.receive(message, this.clock.now());
  }

  /**
   * Leases the oldest available message (of one stream, if given), or null when none is available. Messages
   * whose lease expired `maxAttempts` times are quarantined first (their acknowledgements become pending).
   */
  async lease(options: { stream?: string } = {}): Promise<Lease | null> {
    const token = this.newToken();
    const { leased } = await this.store.lease(
      this.clock.now(),
      this.leaseMs,
      token,
      this.maxAttempts,
      options.stream,
    );
    if (!leased) return null;
    return {
      stream: leased.stream,
      id: leased.id,
      seq: leased.seq,
      payload: leased.payload,
      attempt: leased.attempts,
      token,
      leaseUntil: leased.leaseUntil!,
    };
  }

  /** The handler succeeded: PROCESSED. Throws LeaseLostError if the lease was lost. */
  async complete(lease: Lease): Promise<Acknowledgement> {
    return acknowledgementOf(
      await this.store.complete(lease.stream, lease.id, lease.token, this.clock.now()),
    );
  }

  /** The handler failed: available again, or QUARANTINED (terminal acknowledgement) at the last attempt. */
  async fail(lease: Lease, error: unknown): Promise<FailResult> {
    const now = this.clock.now();
    const info = errorInfo(error);
    if (lease.attempt >= this.maxAttempts) {
      const message = await this.store.fail(lease.stream, lease.id, lease.token, now, info, {
        quarantine: true,
      });
      return { outcome: 'QUARANTINED', acknowledgement: acknowledgementOf(message) };
    }
    const availableAt = now + Math.max(0, this.retryDelayMs(lease.attempt));
    await this.store.fail(lease.stream, lease.id, lease.token, now, info, { quarantine: false, availableAt });
    return { outcome: 'RETRY', attempts: lease.attempt, availableAt };
  }

  /** Leases the next message and runs `handler` on it; null when nothing is available. */
  async process(
    handler: (payload: unknown, lease: Lease) => Promise<void> | void,
    options: { stream?: string } = {},
  ): Promise<ProcessResult | null> {
    const lease = await this.lease(options);
    if (!lease) return null;
    let failure: unknown = null;
    let failed = false;
    try {
      await handler(lease.payload, lease);
    } catch (error) {
      failed = true;
      failure = error;
    }
    try {
      if (!failed) return { outcome: 'PROCESSED', acknowledgement: await this.complete(lease) };
      const result = await this.fail(lease, failure);
      return result.outcome === 'RETRY' ? { ...result, error: errorInfo(failure) } : result;
    } catch (error) {
      if (error instanceof LeaseLostError) return { outcome: 'LEASE_LOST' };
      throw error;
    }
  }

  /** Acknowledgements not yet confirmed delivered (PROCESSED and QUARANTINED), oldest first. */
  async pendingAcknowledgements(): Promise<Acknowledgement[]> {
    return (await this.store.unacknowledged()).map(acknowledgementOf);
  }

  /** The app delivered this acknowledgement to the server. */
  acknowledged(ack: Pick<Acknowledgement, 'stream' | 'id'>): Promise<void> {
    return this.store.markAcknowledged(ack.stream, ack.id, this.clock.now());
  }

  get(stream: string, id: string): Promise<InboxMessage | null> {
    return this.store.get(stream, id);
  }

  list(filter?: Parameters<InboxStore['list']>[0]): Promise<InboxMessage[]> {
    return this.store.list(filter);
  }

  /** Quarantined messages, oldest first. */
  quarantined(): Promise<InboxMessage[]> {
    return this.store.list({ state: 'QUARANTINED' });
  }

  /** Deletes acknowledged messages settled more than `olderThanMs` ago. */
  purge(olderThanMs: number): Promise<number> {
    return this.store.purge(this.clock.now() - olderThanMs);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
