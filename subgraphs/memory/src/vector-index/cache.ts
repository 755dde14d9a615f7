/**
 * The memory subgraph's in-process copies of workspaces' embeddings (FlatIndex), one per (tenant, workspace),
 * within a byte budget. `acquire` returns a copy brought up to date in the caller's transaction, so a search sees
 * every write committed before it began (as its own SQL would), or null when the workspace is searched in SQL
 * instead (the cache is off, or the workspace alone would not fit).
 *
 * - Freshness: every acquire runs a sync round (src/vector-index/sync.ts), usually one statement that reads
 *   nothing. Rounds of one copy never overlap; a search that arrives while one runs waits for the next, which starts
 *   after it arrived (so its snapshot covers everything the search must see), and shares it with every search that
 *   arrived meanwhile.
 * - Budget: least recently used copies are dropped to make room; a workspace that alone needs more than the budget
 *   is searched in SQL, and not tried again for `retryTooLargeMs`.
 * - Lifetime: a copy unused for `idleMs` is dropped (a timer, unref'd), as is one whose last round is older than
 *   `maxStaleMs` (migration 007 keeps tombstones a day, so a copy an hour behind still finds every delete; beyond
 *   that it loads again). Deleting a workspace or erasing a tenant here drops their copies at once (`drop`); other
 *   replicas never use them again (the workspace is gone, so no search reaches them) and drop them when idle.
 */
import type { Queryable } from '@agentgraph/runtime';
import { FlatIndex } from './flat-index.js';
import { IndexTooLarge, syncIndex, type SyncResult } from './sync.js';

export interface VectorCacheOptions {
  /** The budget for all copies, in bytes; 0 turns the cache off. */
  maxBytes: number;
  idleMs?: number;
  maxStaleMs?: number;
  retryTooLargeMs?: number;
  /** Rows per sync statement (tests use small pages). */
  pageSize?: number;
  /** Milliseconds, for idleness and staleness (tests pass a fake). */
  clock?: () => number;
}

interface Entry {
  key: string;
  index: FlatIndex;
  /** The feed watermark reached ('0': nothing loaded yet). */
  watermark: string;
  lastSync: number;
  lastUse: number;
  running: Promise<void> | null;
  queued: Promise<void> | null;
}

export interface VectorCacheStats {
  workspaces: number;
  records: number;
  bytes: number;
  maxBytes: number;
  loads: number;
  rounds: number;
  evictions: number;
  tooLarge: number;
}

const MINUTE = 60_000;

export class VectorCache {
  readonly maxBytes: number;
  private readonly idleMs: number;
  private readonly maxStaleMs: number;
  private readonly retryTooLargeMs: number;
  private readonly pageSize: number | undefined;
  private readonly clock: () => number;
  /** In least-recently-used order (a use moves an entry to the end). */
  private readonly entries = new Map<string, Entry>();
  private readonly tooLarge = new Map<string, number>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly counters = { loads: 0, rounds: 0, evictions: 0, tooLarge: 0 };
  /** The result of the last round that completed, of any copy (tests). */
  lastRound: SyncResult | null = null;

  constructor(opts: VectorCacheOptions) {
    this.maxBytes = Math.max(0, opts.maxBytes);
    this.idleMs = opts.idleMs ?? 10 * MINUTE;
    this.maxStaleMs = opts.maxStaleMs ?? 60 * MINUTE;
    this.retryTooLargeMs = opts.retryTooLargeMs ?? 10 * MINUTE;
    this.pageSize = opts.pageSize;
    this.clock = opts.clock ?? Date.now;
  }

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  /**
   * The workspace's copy, current as of a statement run after this call began, in `tx` (the caller's tenant
   * transaction); null when the workspace is searched in SQL. Use the copy synchronously: the next await may let
   * a round change it.
   */
  async acquire(
    tx: Queryable,
    tenantId: string,
    workspaceId: string,
    dim: number,
  ): Promise<FlatIndex | null> {
    if (!this.enabled) return null;
    const now = this.clock();
    this.sweep(now);
    const key = `${tenantId}/${workspaceId}`;
    const refusedUntil = this.tooLarge.get(key);
    if (refusedUntil !== undefined) {
      if (refusedUntil > now) return null;
      this.tooLarge.delete(key);
    }
    let entry = this.entries.get(key);
    if (entry && (entry.index.dim !== dim || now - entry.lastSync > this.maxStaleMs) && !entry.running) {
      this.entries.delete(key);
      entry = undefined;
    }
    if (!entry) {
      entry = {
        key,
        index: new FlatIndex(dim),
        watermark: '0',
        lastSync: now,
        lastUse: now,
        running: null,
        queued: null,
      };
    } else {
      this.entries.delete(key);
    }
    this.entries.set(key, entry);
    entry.lastUse = now;
    this.startTimer();
    try {
      await this.refresh(entry, tx).catch((err: unknown) => {
        // A round another search ran in its transaction may fail with that transaction (a cancelled request):
        // one more round, in ours.
        if (err instanceof IndexTooLarge) throw err;
        return this.refresh(entry, tx);
      });
    } catch (err) {
      if (!(err instanceof IndexTooLarge)) throw err;
      return null;
    }
    return this.entries.get(key) === entry ? entry.index : null;
  }

  /** Drops the copies of a workspace, or of every workspace of a tenant. */
  drop(tenantId: string, workspaceId?: string): void {
    const prefix = workspaceId === undefined ? `${tenantId}/` : `${tenantId}/${workspaceId}`;
    for (const key of [...this.entries.keys()]) {
      if (workspaceId === undefined ? key.startsWith(prefix) : key === prefix) this.entries.delete(key);
    }
  }

  stats(): VectorCacheStats {
    let records = 0;
    for (const e of this.entries.values()) records += e.index.count;
    return {
      workspaces: this.entries.size,
      records,
      bytes: this.totalBytes(),
      maxBytes: this.maxBytes,
      ...this.counters,
    };
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.entries.clear();
  }

  /** Drops copies unused for idleMs. */
  sweep(now = this.clock()): void {
    for (const [key, e] of this.entries) {
      if (now - e.lastUse > this.idleMs && !e.running) {
        this.entries.delete(key);
        this.counters.evictions++;
      }
    }
    if (this.entries.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.sweep(), Math.min(this.idleMs, MINUTE));
    this.timer.unref();
  }

  private totalBytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.index.bytes;
    return n;
  }

  /** A round that starts after this call: the running one if none is queued behind it, else the queued one. */
  private refresh(e: Entry, tx: Queryable): Promise<void> {
    if (e.running === null) return this.start(e, tx);
    e.queued ??= e.running
      .catch(() => undefined)
      .then(() => {
        e.queued = null;
        return this.start(e, tx);
      });
    return e.queued;
  }

  private start(e: Entry, tx: Queryable): Promise<void> {
    const p = this.round(e, tx).finally(() => {
      if (e.running === p) e.running = null;
    });
    e.running = p;
    return p;
  }

  private async round(e: Entry, tx: Queryable): Promise<void> {
    const first = e.watermark === '0';
    // Room for the copy as it grows: least recently used others are dropped (never one in a round) until it fits.
    const fits = (bytes: number): boolean => {
      let others = this.totalBytes() - e.index.bytes;
      for (const [key, other] of this.entries) {
        if (others + bytes <= this.maxBytes) break;
        if (other !== e && !other.running) {
          this.entries.delete(key);
          this.counters.evictions++;
          others -= other.index.bytes;
        }
      }
      return others + bytes <= this.maxBytes;
    };
    try {
      const result = await syncIndex(tx, e.index, e.key.slice(e.key.indexOf('/') + 1), e.watermark, {
        fits,
        pageSize: this.pageSize,
      });
      e.watermark = result.watermark;
      e.lastSync = this.clock();
      this.lastRound = result;
      this.counters.rounds++;
      if (first) this.counters.loads++;
    } catch (err) {
      // A round that failed part-way leaves the watermark where it was: the next one reads the same feed again
      // (applying a row twice is harmless). A workspace too large for the budget is dropped and searched in SQL.
      if (err instanceof IndexTooLarge) {
        if (this.entries.get(e.key) === e) this.entries.delete(e.key);
        this.counters.tooLarge++;
        this.tooLarge.set(e.key, this.clock() + this.retryTooLargeMs);
      }
      throw err;
    }
  }
}
