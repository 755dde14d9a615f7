/**
 * The expiry sweeper: purges records whose expires_at has passed (their chunks and jobs go with them, ON DELETE
 * CASCADE), across tenants through memory.purge_expired_records. Reads already hide expired records at once
 * (they compare expires_at with the server clock); the sweeper only frees the space. It also drops search
 * tombstones older than TOMBSTONE_RETENTION_MS (migration 007). `sweepExpiredMemory(db, now)`
 * is one pass at a given time (tests use a fake clock); `startMemorySweeper` runs it every `intervalMs`.
 */
import { runPeriodically, type Database, type Logger } from '@agentgraph/runtime';

/** Records purged per call at most; a full batch runs again at once. */
export const PURGE_BATCH = 500;

/**
 * How long search tombstones (migration 007) are kept: far longer than a vector copy may go without a round
 * (src/vector-index/cache.ts reloads one an hour behind), so no copy misses a delete.
 */
export const TOMBSTONE_RETENTION_MS = 24 * 60 * 60 * 1000;

export async function sweepExpiredMemory(db: Database, now: Date, batch = PURGE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await db.query<{ n: number }>('SELECT memory.purge_expired_records($1, $2) AS n', [
      now.toISOString(),
      batch,
    ]);
    const n = Number(r.rows[0]?.n ?? 0);
    total += n;
    if (n < batch) break;
  }
  const before = new Date(now.getTime() - TOMBSTONE_RETENTION_MS).toISOString();
  for (;;) {
    const r = await db.query<{ n: number }>('SELECT memory.purge_search_tombstones($1, $2) AS n', [
      before,
      batch * 10,
    ]);
    if (Number(r.rows[0]?.n ?? 0) < batch * 10) return total;
  }
}

export function startMemorySweeper(opts: {
  db: Database;
  log: Logger;
  now: () => Date;
  intervalMs?: number;
}): () => Promise<void> {
  return runPeriodically({
    intervalMs: opts.intervalMs ?? 10_000,
    log: opts.log,
    failureMessage: 'memory expiry sweep failed',
    run: async () => {
      const n = await sweepExpiredMemory(opts.db, opts.now());
      if (n) opts.log.info('memory expiry sweep', { purged: n });
    },
  });
}
