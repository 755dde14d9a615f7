/**
 * One read for many streams: when ten thousand streams of one room are woken by the same notification, they all want
 * the same rows (the same tenant, room, position and page size), so the first one reads and the others join its read
 * while it is in flight. A read is shared only by streams that declare it identical (`shareKey` in seq-stream.ts:
 * rows that depend on the tenant and the key alone, never on the principal asking).
 *
 * Joining must not break "listen first" (seq-stream.ts): a stream that became dirty (a notification, a listener
 * reconnect, its LISTEN just in place) needs a read that started after that moment, else the commit that woke it may
 * be missing from the rows. So every such moment and every read's start is stamped on one process-wide counter
 * (`moment()`), and a stream joins an in-flight read only if the read started after the stream's latest stamp. The
 * hub stamps a notification once and hands that stamp to every stream it wakes, so the streams woken together all
 * join the read the first of them started (in the same turn, before the statement was even sent).
 *
 * A read's result is shared as is (the same array and rows): sharers must not modify them. If the read fails, every
 * sharer gets the error; a sharer that stops waiting (its stream aborted) does not stop the read for the others.
 */
import type { Database } from '@agentgraph/runtime';

let clock = 0;

/** A new point in this process's order of events (notifications, listens, read starts). */
export function moment(): number {
  return ++clock;
}

interface Flight {
  /** `moment()` when the read started: it sees every commit notified before that. */
  readonly startedAt: number;
  readonly rows: Promise<unknown>;
}

/** The reads in flight of one database handle, by key. */
export class SharedReads {
  private readonly flights = new Map<string, Flight>();

  /** Reads in flight (for tests and metrics). */
  get inFlight(): number {
    return this.flights.size;
  }

  /**
   * The rows of `key`: joins the read of `key` in flight if it started after `since` (the caller's latest reason to
   * read), else starts `read` and lets later callers join it until it settles.
   */
  read<T>(key: string, since: number, read: () => Promise<T>): Promise<T> {
    const flight = this.flights.get(key);
    if (flight && flight.startedAt > since) return flight.rows as Promise<T>;
    const startedAt = moment();
    let rows: Promise<T>;
    try {
      rows = read();
    } catch (err) {
      rows = Promise.reject(err);
    }
    const entry: Flight = { startedAt, rows };
    this.flights.set(key, entry);
    const settled = () => {
      if (this.flights.get(key) === entry) this.flights.delete(key);
    };
    rows.then(settled, settled);
    return rows;
  }
}

const perDatabase = new WeakMap<Database, SharedReads>();

/** The shared reads of a database handle (reads on different handles are never shared). */
export function sharedReadsOf(db: Database): SharedReads {
  let reads = perDatabase.get(db);
  if (!reads) perDatabase.set(db, (reads = new SharedReads()));
  return reads;
}
