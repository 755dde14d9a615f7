/**
 * The expiry sweeper: purges records whose expires_at has passed (their chunks and jobs go with them, ON DELETE
 * CASCADE), across tenants through memory.purge_expired_records. Reads already hide expired records at once
 * (they compare expires_at with the server clock); the sweeper only frees the space. `sweepExpiredMemory(db, now)`
 * is one pass at a given time (tests use a fake clock); `startMemorySweeper` runs it every `intervalMs`.
 */
import { runPeriodically, type Database, type Logger } from '@agentgraph/runtime';

/** Records purged per call at most; a full batch runs again at once. */
export const PURGE_BATCH = 500;

export async function sweepExpiredMemory(db: Database, now: Date, batch = PURGE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await db.query<{ n: number }>('SELECT memory.purge_expired_records($1, $2) AS n', [
      now.toISOString(),
      batch,
    ]);
    const n = Number(r.rows[0]?.n ?? 0);
    total += n;
    if (n < batch) return total;
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
