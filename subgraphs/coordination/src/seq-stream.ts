/**
 * A live, resumable stream over an append-only, gap-free sequence (a room's messages, a device's intents, an
 * intent's state changes): the backlog after a resume point, then live items, in sequence order, with no gap and
 * no duplicate, woken by PostgreSQL NOTIFY (in-process for PGlite, across processes for a PostgreSQL server).
 *
 * Why it cannot gap, duplicate or reorder (the writer's side is the caller's promise):
 *  - writers number items under a row lock and insert them in the same transaction, so items commit in sequence
 *    order: any snapshot that holds seq n holds 1..n-1;
 *  - the listener is registered before the backlog is read, so an item committed after the read raises a
 *    notification we are already listening for; one committed before it is in the read;
 *  - a notification only marks the stream dirty; the stream then reads `seq > lastYielded` in pages. A missed or
 *    coalesced notification loses nothing, a lost listener connection triggers the same re-read (onReconnect),
 *    and reading past the last yielded seq cannot yield a seq twice;
 *  - notifications wait in one dirty flag, not a queue: memory per subscriber is constant;
 *  - one LISTEN per channel per process (notification-hub.ts) routes each notification to the streams of its key;
 *  - with `shareKey`, streams wanting the same page at the same moment share one read (shared-read.ts): a stream joins
 *    a read in flight only if it started after the stream's latest reason to read, so the read sees that commit.
 * The stream ends when `signal` aborts, the consumer returns, or `isLast` says so, and always unlistens.
 */
import {
  withTenant,
  type AuthContext,
  type Database,
  type Logger,
  type Queryable,
} from '@agentgraph/runtime';
import {
  subscribeNotifications,
  unsubscribeNotifications,
  type ChannelRouter,
  type HubSubscriber,
} from './notification-hub.js';
import { moment, sharedReadsOf } from './shared-read.js';

/** Rows read per round trip while catching up. */
export const STREAM_PAGE_SIZE = 100;

export interface SequencedStreamOptions<T> {
  db: Database;
  auth: AuthContext;
  log: Logger;
  signal: AbortSignal;
  /** NOTIFY channel to listen on. */
  channel: string;
  /** The channel's routing (the same function for every stream of the channel) and this stream's key. */
  router: ChannelRouter;
  routeKey: string;
  /** Items with seq > after, in seq order, at most `limit`, read in the caller's tenant transaction. */
  read(tx: Queryable, after: number, limit: number): Promise<T[]>;
  /**
   * Optional: the same read as one statement outside a transaction that sets the caller's tenant for RLS itself
   * (e.g. a function calling set_config): one round trip per wake-up instead of three (BEGIN, read, COMMIT).
   */
  readOnce?(db: Queryable, after: number, limit: number): Promise<T[]>;
  seqOf(item: T): number;
  /**
   * Optional: streams with the same `shareKey` read the same rows for the same position and page size, whoever asks
   * (e.g. `tenant:room`: room messages are tenant-scoped, not principal-scoped), so one read in flight serves all of
   * them (shared-read.ts). Leave it out when the rows depend on the principal. Shared items are never modified.
   */
  shareKey?: string;
  /** Yield items with seq greater than this. */
  afterSeq: number;
  /** Ends the stream after yielding an item for which this is true (e.g. a terminal state). */
  isLast?(item: T): boolean;
  pageSize?: number;
  /** Context for log lines (ids, never content). */
  logFields: Record<string, unknown>;
}

const DONE = Object.freeze({ value: undefined, done: true }) as IteratorReturnResult<undefined>;
/** The buffer of a stream with nothing buffered (never written to). */
const NOTHING: readonly never[] = Object.freeze([]);

/**
 * The stream as one object with explicit promises, not an async generator: while idle it holds its state, one
 * pending `next()` promise, its hub entry and one abort listener (no suspended function, no closures of its own; it
 * is its own hub subscriber and abort listener). `pump` runs only while there is something to do: subscribe, read a
 * page, hand out an item, end.
 */
class SequencedStream<T> implements HubSubscriber {
  /** The last seq accepted (handed out, or buffered in `page` to be). */
  private last: number;
  /** Items read and not yet handed out, from `index` on. */
  private page: readonly T[] = NOTHING;
  private index = 0;
  /** Something may have been committed since the last read (a notification, a reconnect, a full page). */
  private dirty = true;
  /** When this stream last became dirty (`moment()`): a shared read must have started after it. */
  private since = 0;
  private listening: 'no' | 'pending' | 'yes' = 'no';
  private done = false;
  private running = false;
  /** The pending `next()`: its promise and the functions that settle it. */
  private pending: Promise<IteratorResult<T, void>> | null = null;
  private resolve: ((result: IteratorResult<T, void>) => void) | null = null;
  private reject: ((err: unknown) => void) | null = null;

  constructor(private readonly opts: SequencedStreamOptions<T>) {
    this.last = opts.afterSeq;
  }

  next(): Promise<IteratorResult<T, void>> {
    // One at a time, in order (a caller that overlaps them waits its turn).
    if (this.pending) return this.pending.then(() => this.next());
    if (this.done) return Promise.resolve(DONE);
    const pending = new Promise<IteratorResult<T, void>>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.pending = pending;
    void this.pump();
    return pending;
  }

  async return(): Promise<IteratorResult<T, void>> {
    await this.finish();
    return DONE;
  }

  async throw(err?: unknown): Promise<IteratorResult<T, void>> {
    await this.finish();
    throw err;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Something this stream may care about was committed (this process heard of it at `at`). */
  poke(at: number): void {
    this.dirty = true;
    this.since = at;
    if (this.pending) void this.pump();
  }

  /** The listener connection came back: anything may have been missed. */
  reconnected(at: number): void {
    this.opts.log.info('stream listener reconnected; re-reading', this.opts.logFields);
    this.poke(at);
  }

  /** The signal's abort: a waiting stream ends now. */
  handleEvent(): void {
    this.poke(moment());
  }

  private take(): ((result: IteratorResult<T, void>) => void) | null {
    const resolve = this.resolve;
    this.pending = this.resolve = this.reject = null;
    return resolve;
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { opts } = this;
    try {
      while (this.pending && !this.done) {
        if (opts.signal.aborted) {
          await this.finish();
          return;
        }
        if (this.listening === 'no') {
          // Listen first: from here on no commit can slip between the backlog read and the live phase.
          this.listening = 'pending';
          opts.signal.addEventListener('abort', this);
          await subscribeNotifications(opts.db, opts.channel, opts.router, opts.routeKey, this);
          this.listening = 'yes';
          this.since = moment(); // the backlog read must start after the LISTEN is in place
          if (this.done) await this.unlisten(); // ended while subscribing
          continue;
        }
        if (this.index < this.page.length) {
          const item = this.page[this.index]!;
          // Handed out: not kept (a shared page is other streams' too, and is let go as a whole).
          if (opts.shareKey === undefined) (this.page as T[])[this.index] = undefined as T;
          this.index++;
          this.take()!({ value: item, done: false });
          if (opts.isLast?.(item)) await this.finish();
          continue;
        }
        this.page = NOTHING;
        this.index = 0;
        if (!this.dirty) return; // idle until a poke
        this.dirty = false;
        await this.read();
      }
    } catch (err) {
      const reject = this.reject;
      this.pending = this.resolve = this.reject = null;
      await this.finish();
      reject?.(err);
    } finally {
      this.running = false;
    }
  }

  /** Reads the page after `last`; accepts its items up to a gap, and marks a full page for another read. */
  private async read(): Promise<void> {
    const { opts } = this;
    const pageSize = opts.pageSize ?? STREAM_PAGE_SIZE;
    const from = this.last;
    const read = () =>
      opts.readOnce
        ? opts.readOnce(opts.db, from, pageSize)
        : withTenant(opts.db, opts.auth, (tx) => opts.read(tx, from, pageSize));
    const page =
      opts.shareKey === undefined
        ? await read()
        : await sharedReadsOf(opts.db).read(`${opts.shareKey}:${from}:${pageSize}`, this.since, read);
    if (this.done) return;
    let accepted = page.length;
    for (let i = 0; i < page.length; i++) {
      const seq = opts.seqOf(page[i]!);
      if (seq !== this.last + 1) {
        // Cannot happen while seqs commit in order (see above); never skip silently if it ever does.
        opts.log.error('stream found a gap in the sequence; re-reading', {
          ...opts.logFields,
          expected: this.last + 1,
          got: seq,
        });
        accepted = i;
        break;
      }
      this.last = seq;
    }
    this.page = accepted === page.length ? page : page.slice(0, accepted);
    this.index = 0;
    // A full page without a gap: there may be more right after it (a fresh read, shared with no earlier one).
    if (page.length === pageSize && accepted === page.length) {
      this.dirty = true;
      this.since = moment();
    }
  }

  /** Ends the stream once: answers a pending `next()` with done, stops listening. */
  private async finish(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.page = NOTHING;
    this.take()?.(DONE);
    this.opts.signal.removeEventListener('abort', this);
    if (this.listening === 'yes') await this.unlisten();
  }

  private async unlisten(): Promise<void> {
    const { opts } = this;
    this.listening = 'no';
    await unsubscribeNotifications(opts.db, opts.channel, opts.routeKey, this).catch((err: unknown) =>
      opts.log.warn('stream could not unlisten', { ...opts.logFields, error: err }),
    );
  }
}

export function sequencedStream<T>(opts: SequencedStreamOptions<T>): AsyncGenerator<T, void, undefined> {
  return new SequencedStream(opts) as unknown as AsyncGenerator<T, void, undefined>;
}
