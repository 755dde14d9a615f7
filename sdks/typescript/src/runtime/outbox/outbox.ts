/**
 * The outbox worker: durable, ordered, exactly-once-friendly delivery of mutations.
 *
 * - `enqueue` persists an entry with its idempotency key made once, here; every send of the entry (after retries,
 *   after a crash) uses that key, so the server applies it at most once.
 * - Rooms are ordering keys. The head of a room (its oldest pending entry) blocks only that room: while it waits to
 *   be retried, later entries of the same room wait, other rooms go on. Up to `concurrency` rooms send at once.
 * - A retryable failure → RETRYABLE, sent again after `delayFor(attempt, failure)`; any other failure → POISON at
 *   once (the dead-letter list), and the room moves on. A retryable failure the server took the message for and
 *   failed on (INTERNAL_SERVER_ERROR, HTTP 500: a failed delivery) is counted; at `maxFailedDeliveries` (3) the
 *   entry goes to POISON with that error. An entry not SENT within its TTL (7 days) → EXPIRED.
 * - On open, entries left SENDING by a crash go back to QUEUED with their key (the server answers the resend with
 *   the stored result if the first send had committed).
 *
 * Browser-safe: it only talks to an OutboxStore (SqliteOutboxStore on Node).
 */
import { systemClock, type Clock } from '../clock.js';
import {
  defaultOutboxDelay,
  describeFailure,
  isFailedDelivery,
  type OutboxDelay,
  type SendFailure,
} from './failure.js';
import {
  OutboxStateError,
  type OutboxEntry,
  type OutboxErrorInfo,
  type OutboxFilter,
  type OutboxState,
  type OutboxStore,
} from './types.js';

export const DEFAULT_OUTBOX_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** Failed deliveries (the server took the entry and failed on it) after which an entry goes to POISON. */
export const DEFAULT_MAX_FAILED_DELIVERIES = 3;

/** Sends one entry (the SDK client's execute with `entry.idempotencyKey`); throws the SDK's errors on failure. */
export type OutboxSend = (entry: OutboxEntry, signal: AbortSignal) => Promise<unknown>;

export interface OutboxOptions {
  store: OutboxStore;
  send: OutboxSend;
  /** Time (and the waits between retries); default the system clock. */
  clock?: Clock;
  /** Time to live of an entry (default 7 days). */
  ttlMs?: number;
  /** Rooms sending at the same time (default 4). */
  concurrency?: number;
  /** Delay before resending after a retryable failure (default: 1 s doubling to 5 min, at least Retry-After). */
  delayFor?: OutboxDelay;
  /**
   * Failed deliveries (INTERNAL_SERVER_ERROR or HTTP 500: the server took the message and failed on it) after which
   * an entry goes to POISON instead of being sent again (default 3, at least 1). Offline and "wait" failures
   * (network, timeout, 502/503/504, RATE_LIMITED, IDEMPOTENCY_KEY_IN_PROGRESS) are not counted.
   */
  maxFailedDeliveries?: number;
  newId?: () => string;
  newKey?: () => string;
  /**
   * How long the server keeps idempotency keys (the capabilities query publishes it; at least 24 h). When set, an
   * entry whose first send is older than this is not sent again (the server may have forgotten its key, so a
   * resend could apply it twice): it becomes EXPIRED with code IDEMPOTENCY_WINDOW_PASSED. Unset: only the TTL.
   */
  keyRetentionMs?: number;
  /** Called after every state change the worker makes (SENDING, SENT, RETRYABLE, POISON, EXPIRED, QUEUED). */
  onChange?: (entry: OutboxEntry) => void;
}

export interface EnqueueInput {
  room: string;
  operation: string;
  variables?: Record<string, unknown>;
  /** Default: a new key (newKey). Pass one only if you made and persisted it yourself. */
  idempotencyKey?: string;
}

export interface OutboxCounters {
  enqueued: number;
  sends: number;
  sent: number;
  retried: number;
  poisoned: number;
  expired: number;
  /** SENDING entries put back to QUEUED when the outbox was opened (crash recovery). */
  recovered: number;
}

/** The dead-letter export: POISON and EXPIRED entries, as JSON the app can save or show. */
export interface DeadLetterExport {
  exportedAt: string;
  entries: Array<
    Omit<OutboxEntry, 'createdAt' | 'updatedAt' | 'expiresAt' | 'nextAttemptAt' | 'firstAttemptAt'> & {
      createdAt: string;
      updatedAt: string;
      expiresAt: string;
      firstAttemptAt: string | null;
    }
  >;
}

const iso = (ms: number) => new Date(ms).toISOString();

function requireText(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`Outbox.enqueue: ${name} must be a non-empty string.`);
  }
  return value;
}

/** Variables must survive a JSON round trip unchanged in shape (they are stored as JSON). */
function requireJsonObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('Outbox.enqueue: variables must be a plain object.');
  }
  try {
    return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  } catch (error) {
    throw new TypeError(`Outbox.enqueue: variables must be JSON-serializable (${(error as Error).message}).`);
  }
}

export class Outbox {
  private readonly store: OutboxStore;
  private readonly send: OutboxSend;
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly concurrency: number;
  private readonly delayFor: OutboxDelay;
  private readonly maxFailedDeliveries: number;
  private readonly newId: () => string;
  private readonly newKey: () => string;
  private readonly keyRetentionMs: number | undefined;
  private readonly onChange: (entry: OutboxEntry) => void;
  private readonly inFlight = new Map<string, Promise<void>>();
  private stopSends = new AbortController();
  private readonly counts: OutboxCounters = {
    enqueued: 0,
    sends: 0,
    sent: 0,
    retried: 0,
    poisoned: 0,
    expired: 0,
    recovered: 0,
  };
  private wake: () => void = () => undefined;
  private running: Promise<void> | null = null;
  private stopping = false;
  private closed = false;

  private constructor(options: OutboxOptions) {
    this.store = options.store;
    this.send = options.send;
    this.clock = options.clock ?? systemClock;
    this.ttlMs = options.ttlMs ?? DEFAULT_OUTBOX_TTL_MS;
    this.concurrency = options.concurrency ?? 4;
    this.delayFor = options.delayFor ?? defaultOutboxDelay;
    this.maxFailedDeliveries = options.maxFailedDeliveries ?? DEFAULT_MAX_FAILED_DELIVERIES;
    this.newId = options.newId ?? (() => globalThis.crypto.randomUUID());
    this.newKey = options.newKey ?? (() => globalThis.crypto.randomUUID());
    this.keyRetentionMs = options.keyRetentionMs;
    this.onChange = options.onChange ?? (() => undefined);
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new TypeError('Outbox: concurrency must be a positive integer.');
    }
    if (!(this.ttlMs > 0)) throw new TypeError('Outbox: ttlMs must be positive.');
    if (!Number.isInteger(this.maxFailedDeliveries) || this.maxFailedDeliveries < 1) {
      throw new TypeError(
        `Outbox: maxFailedDeliveries must be an integer of at least 1 (got ${String(options.maxFailedDeliveries)}).`,
      );
    }
  }

  /** Opens an outbox on a store: crash recovery (SENDING → QUEUED, same key), then expiry. */
  static async open(options: OutboxOptions): Promise<Outbox> {
    const outbox = new Outbox(options);
    const now = outbox.clock.now();
    outbox.counts.recovered = await outbox.store.recover(now);
    await outbox.expireDue(now);
    return outbox;
  }

  /** Persists a new QUEUED entry (its idempotency key is made now) and wakes the worker. */
  async enqueue(input: EnqueueInput): Promise<OutboxEntry> {
    if (this.closed) throw new Error('Outbox.enqueue: the outbox is closed.');
    const room = requireText(input.room, 'room');
    const operation = requireText(input.operation, 'operation');
    const variables = requireJsonObject(input.variables ?? {});
    const idempotencyKey =
      input.idempotencyKey === undefined
        ? this.newKey()
        : requireText(input.idempotencyKey, 'idempotencyKey');
    const now = this.clock.now();
    const entry = await this.store.add({
      id: this.newId(),
      room,
      operation,
      variables,
      idempotencyKey,
      createdAt: now,
      expiresAt: now + this.ttlMs,
    });
    this.counts.enqueued++;
    this.wake();
    return entry;
  }

  /**
   * Sends until nothing is pending: every entry ends SENT, POISON or EXPIRED. Waits between retries with the
   * clock. Rejects if a store operation fails (a send failure is not a store failure: it is recorded).
   */
  async drain(signal?: AbortSignal): Promise<void> {
    if (this.running) throw new Error('Outbox.drain: the outbox is already running (start() was called).');
    this.beginRun();
    this.running = this.loop(false, signal);
    try {
      await this.running;
    } finally {
      this.running = null;
    }
  }

  /** Runs in the background until stop(): sends as entries arrive and as retries fall due. */
  start(): void {
    if (this.running) throw new Error('Outbox.start: the outbox is already running.');
    this.beginRun();
    this.running = this.loop(true);
    // A store failure ends the loop; stop() rethrows it.
    this.running.catch(() => undefined);
  }

  /**
   * Stops the worker. In-flight sends finish and are recorded (default); with `{ abort: true }` they are aborted
   * and their entries go back to QUEUED with their key. Rethrows a store failure that ended a background run.
   */
  async stop(options: { abort?: boolean } = {}): Promise<void> {
    this.stopping = true;
    if (options.abort) this.stopSends.abort(new Error('outbox stopped'));
    this.wake();
    const running = this.running;
    this.running = null;
    await Promise.allSettled([...this.inFlight.values()]);
    if (running) await running;
  }

  /** stop() and close the store. */
  async close(options: { abort?: boolean } = {}): Promise<void> {
    await this.stop(options);
    this.closed = true;
    await this.store.close();
  }

  get(id: string): Promise<OutboxEntry | null> {
    return this.store.get(id);
  }

  list(filter?: OutboxFilter): Promise<OutboxEntry[]> {
    return this.store.list(filter);
  }

  /** The dead-letter list: POISON entries (and EXPIRED ones unless `includeExpired: false`), oldest first. */
  deadLetters(options: { includeExpired?: boolean } = {}): Promise<OutboxEntry[]> {
    const states: OutboxState[] = options.includeExpired === false ? ['POISON'] : ['POISON', 'EXPIRED'];
    return this.store.list({ state: states });
  }

  /** The dead-letter list as JSON (times as ISO 8601). Holds the entries' variables: it is the app's own data. */
  async exportDeadLetters(options: { includeExpired?: boolean } = {}): Promise<string> {
    const entries = await this.deadLetters(options);
    const out: DeadLetterExport = {
      exportedAt: iso(this.clock.now()),
      entries: entries.map(({ nextAttemptAt: _next, ...e }) => ({
        ...e,
        createdAt: iso(e.createdAt),
        updatedAt: iso(e.updatedAt),
        expiresAt: iso(e.expiresAt),
        firstAttemptAt: e.firstAttemptAt === null ? null : iso(e.firstAttemptAt),
      })),
    };
    return JSON.stringify(out, null, 2);
  }

  /**
   * Puts a POISON or EXPIRED entry back in its room's line (same key, fresh TTL, failedDeliveries 0), e.g. after
   * fixing its cause.
   */
  async revive(id: string): Promise<OutboxEntry> {
    const now = this.clock.now();
    const entry = await this.store.revive(id, now, now + this.ttlMs);
    this.wake();
    return entry;
  }

  /** Deletes SENT (and POISON/EXPIRED, unless `states` says otherwise) entries settled more than `olderThanMs` ago. */
  purge(olderThanMs: number, states?: readonly OutboxState[]): Promise<number> {
    return this.store.purge(this.clock.now() - olderThanMs, states);
  }

  counters(): OutboxCounters {
    return { ...this.counts };
  }

  private beginRun(): void {
    if (this.closed) throw new Error('Outbox: the outbox is closed.');
    this.stopping = false;
    if (this.stopSends.signal.aborted) this.stopSends = new AbortController();
  }

  private async loop(background: boolean, signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (this.stopping) return;
      if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('drain aborted');
      const woken = new Promise<void>((resolve) => (this.wake = resolve));
      const now = this.clock.now();
      await this.expireDue(now);
      const nextDue = await this.startDueSends(now);
      if (this.inFlight.size > 0) {
        await Promise.race([...this.inFlight.values(), woken]);
        continue;
      }
      if (nextDue === null) {
        if (!background) return;
        await woken;
        continue;
      }
      await this.sleepUntil(nextDue, woken, signal);
    }
  }

  /** Waits with the clock until `at`, or until woken (enqueue, revive, stop). */
  private async sleepUntil(at: number, woken: Promise<void>, signal?: AbortSignal): Promise<void> {
    const ms = at - this.clock.now();
    if (ms <= 0) return;
    const cancel = new AbortController();
    const onAbort = () => cancel.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.race([
        this.clock.sleep(ms, cancel.signal).catch(() => undefined),
        woken.then(() => cancel.abort()),
      ]);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private async expireDue(now: number): Promise<void> {
    for (const entry of await this.store.expire(now)) {
      this.counts.expired++;
      this.onChange(entry);
    }
  }

  /**
   * Starts a send for each due room head (rooms not already sending, up to `concurrency`). Returns when the next
   * not-yet-due head falls due (null when no room has a pending entry that is not sending).
   */
  private async startDueSends(now: number): Promise<number | null> {
    let nextDue: number | null = null;
    for (const head of await this.store.heads()) {
      if (this.inFlight.has(head.room) || head.state === 'SENDING') continue;
      if (this.keyRetentionPassed(head, now)) {
        const expired = await this.store.markExpired(head.id, now, {
          code: 'IDEMPOTENCY_WINDOW_PASSED',
          message:
            `First sent ${Math.round((now - head.firstAttemptAt!) / 1000)} s ago, longer than the server keeps ` +
            `idempotency keys: a resend could apply it twice. Check the server's state, then revive or drop it.`,
        });
        this.counts.expired++;
        this.onChange(expired);
        continue;
      }
      const dueAt = head.state === 'RETRYABLE' ? (head.nextAttemptAt ?? now) : now;
      if (dueAt > now) {
        nextDue = nextDue === null ? dueAt : Math.min(nextDue, dueAt);
        continue;
      }
      if (this.inFlight.size >= this.concurrency) {
        nextDue = nextDue === null ? now : Math.min(nextDue, now);
        continue;
      }
      const room = head.room;
      const sending = (async () => {
        try {
          await this.sendOne(head);
        } finally {
          // Free the room before waking the loop, so the next pass can start the room's next entry.
          this.inFlight.delete(room);
          this.wake();
        }
      })();
      sending.catch(() => undefined); // the loop's race (or stop) reports it
      this.inFlight.set(room, sending);
    }
    return nextDue;
  }

  private keyRetentionPassed(head: OutboxEntry, now: number): boolean {
    return (
      this.keyRetentionMs !== undefined &&
      head.firstAttemptAt !== null &&
      now - head.firstAttemptAt > this.keyRetentionMs
    );
  }

  private async sendOne(head: OutboxEntry): Promise<void> {
    let entry: OutboxEntry;
    try {
      entry = await this.store.markSending(head.id, this.clock.now());
    } catch (error) {
      if (error instanceof OutboxStateError) return; // moved meanwhile (revived, expired): nothing to send
      throw error;
    }
    this.counts.sends++;
    this.onChange(entry);
    let failure: SendFailure | null = null;
    const signal = this.stopSends.signal;
    try {
      await this.send(entry, signal);
    } catch (error) {
      failure = describeFailure(error);
    }
    const now = this.clock.now();
    if (failure === null) {
      this.counts.sent++;
      this.onChange(await this.store.markSent(entry.id, now));
    } else if (signal.aborted) {
      this.onChange(await this.store.requeue(entry.id, now));
    } else {
      const info: OutboxErrorInfo = { code: failure.code, message: failure.message };
      const failedDelivery = isFailedDelivery(failure);
      const limitReached = failedDelivery && entry.failedDeliveries + 1 >= this.maxFailedDeliveries;
      if (failure.retryable && !limitReached) {
        const delay = Math.max(0, this.delayFor(entry.attempts, failure));
        this.counts.retried++;
        this.onChange(await this.store.markRetryable(entry.id, now, now + delay, info, { failedDelivery }));
      } else {
        this.counts.poisoned++;
        this.onChange(await this.store.markPoison(entry.id, now, info, { failedDelivery }));
      }
    }
  }
}
