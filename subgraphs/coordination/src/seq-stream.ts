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
 *  - one LISTEN per channel per process (notification-hub.ts) routes each notification to the streams of its key.
 * The stream ends when `signal` aborts, the consumer returns, or `isLast` says so, and always unlistens.
 */
import {
  withTenant,
  type AuthContext,
  type Database,
  type Logger,
  type Queryable,
} from '@agentgraph/runtime';
import { subscribeNotifications, type ChannelRouter, type HubSubscriber } from './notification-hub.js';

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
  /** Yield items with seq greater than this. */
  afterSeq: number;
  /** Ends the stream after yielding an item for which this is true (e.g. a terminal state). */
  isLast?(item: T): boolean;
  pageSize?: number;
  /** Context for log lines (ids, never content). */
  logFields: Record<string, unknown>;
}

export async function* sequencedStream<T>(
  opts: SequencedStreamOptions<T>,
): AsyncGenerator<T, void, undefined> {
  const { db, auth, log, signal, logFields } = opts;
  const pageSize = opts.pageSize ?? STREAM_PAGE_SIZE;
  if (signal.aborted) return;

  // One-slot wake-up: `dirty` remembers that something may have arrived while we were busy reading or yielding.
  let dirty = true;
  let wake: (() => void) | null = null;
  const poke = () => {
    dirty = true;
    const w = wake;
    wake = null;
    w?.();
  };
  const subscriber: HubSubscriber = {
    poke,
    reconnected: () => {
      log.info('stream listener reconnected; re-reading', logFields);
      poke();
    },
  };

  signal.addEventListener('abort', poke);
  // Listen first: from here on no commit can slip between the backlog read and the live phase.
  let unlisten: (() => Promise<void>) | null = null;
  try {
    unlisten = await subscribeNotifications(db, opts.channel, opts.router, opts.routeKey, subscriber);
    let last = opts.afterSeq;
    while (!signal.aborted) {
      if (!dirty) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      dirty = false;
      for (;;) {
        const from = last;
        const page = opts.readOnce
          ? await opts.readOnce(db, from, pageSize)
          : await withTenant(db, auth, (tx) => opts.read(tx, from, pageSize));
        for (const item of page) {
          if (signal.aborted) return;
          const seq = opts.seqOf(item);
          if (seq !== last + 1) {
            // Cannot happen while seqs commit in order (see above); never skip silently if it ever does.
            log.error('stream found a gap in the sequence; re-reading', {
              ...logFields,
              expected: last + 1,
              got: seq,
            });
            break;
          }
          last = seq;
          yield item;
          if (opts.isLast?.(item)) return;
        }
        if (page.length < pageSize || last !== (page.length ? opts.seqOf(page.at(-1)!) : last)) break;
      }
    }
  } finally {
    signal.removeEventListener('abort', poke);
    wake = null;
    if (unlisten) {
      await unlisten().catch((err: unknown) =>
        log.warn('stream could not unlisten', { ...logFields, error: err }),
      );
    }
  }
}
