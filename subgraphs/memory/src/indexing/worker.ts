/**
 * The indexing worker: claims due jobs from memory.jobs (memory.claim_jobs: FOR UPDATE SKIP LOCKED, leased), then
 * runs each in its tenant's transaction: cut the record's content into chunks (their tsvector is a generated
 * column) and mark the job SUCCEEDED, all or nothing. A failed attempt is recorded in a transaction of its own:
 * FAILED with run_after = now + backoff, or DEAD once attempts reach max_attempts (3). A job whose lease ran out
 * (its worker died) is claimed again and counts as an attempt.
 *
 * `runIndexingJobs(db, opts)` is one pass at the clock's time (tests call it with a fake clock);
 * `startIndexingWorker` runs passes in the background, woken by NOTIFY memory_jobs and by a timer for retries.
 */
import type { Database, Logger, Queryable } from '@agentgraph/runtime';
import { JOBS_CHANNEL, lockIndexing } from '../store.js';
import { chunkText, DEFAULT_CHUNKING, type ChunkOptions } from './chunk.js';

export interface IndexingJob {
  tenantId: string;
  jobId: string;
  recordId: string;
  attempt: number;
}

export interface IndexingOptions {
  now: () => Date;
  chunking?: ChunkOptions;
  /** Jobs claimed per pass (default 20). */
  batch?: number;
  /** How long a claimed job is leased to this worker (seconds, default 60). */
  leaseSeconds?: number;
  /** Wait before retry n (1-based) in ms; default 1 s, 4 s, 16 s … (4^(n-1) s, capped at 10 min). */
  backoffMs?: (attempt: number) => number;
  /** Called inside the job's transaction before the record is indexed; throwing fails the attempt (tests). */
  beforeIndex?: (job: IndexingJob) => void | Promise<void>;
}

export interface IndexingPass {
  succeeded: number;
  failed: number;
  dead: number;
  /** The record changed hands or vanished under us (deleted): nothing to do. */
  skipped: number;
}

export const defaultBackoffMs = (attempt: number): number => Math.min(4 ** (attempt - 1) * 1000, 600_000);

function errorText(err: unknown): string {
  const message = err instanceof Error ? `${err.name}: ${err.message}` : 'non-error thrown';
  return message.slice(0, 500);
}

async function indexRecord(tx: Queryable, job: IndexingJob, chunking: ChunkOptions): Promise<boolean> {
  // One indexer per record at a time (two jobs of one record would race on the chunk keys), and writers of the
  // record wait for it before they clear its chunks (see lockIndexing for the lock order). The row lock comes
  // before any chunk is touched: a deleter holding the row then never waits for us.
  await lockIndexing(tx, job.tenantId, job.recordId);
  const rec = await tx.query<{ content: string; version: number }>(
    'SELECT content, version FROM memory.records WHERE id = $1 FOR KEY SHARE',
    [job.recordId],
  );
  const row = rec.rows[0];
  if (!row) return false;
  const chunks = chunkText(row.content, chunking);
  await tx.query('DELETE FROM memory.chunks WHERE record_id = $1', [job.recordId]);
  if (chunks.length > 0) {
    await tx.query(
      `INSERT INTO memory.chunks (tenant_id, record_id, n, record_version, content)
       SELECT $1, $2, t.n - 1, $3, t.content FROM unnest($4::text[]) WITH ORDINALITY AS t(content, n)`,
      [job.tenantId, job.recordId, row.version, chunks],
    );
  }
  return true;
}

export async function runIndexingJobs(db: Database, opts: IndexingOptions): Promise<IndexingPass> {
  const now = opts.now();
  const pass: IndexingPass = { succeeded: 0, failed: 0, dead: 0, skipped: 0 };
  const claimed = await db.query<{
    job_tenant_id: string;
    job_id: string;
    job_record_id: string;
    job_attempts: number;
    job_max_attempts: number;
  }>('SELECT * FROM memory.claim_jobs($1, $2, $3)', [
    now.toISOString(),
    opts.batch ?? 20,
    opts.leaseSeconds ?? 60,
  ]);
  for (const c of claimed.rows) {
    const job: IndexingJob = {
      tenantId: c.job_tenant_id,
      jobId: c.job_id,
      recordId: c.job_record_id,
      attempt: c.job_attempts,
    };
    const settings = { 'app.tenant_id': job.tenantId, 'app.principal_id': 'system:memory-indexer' };
    // Only while the job is still ours (RUNNING at this attempt): a lease that ran out may have passed it on.
    const mine = `WHERE id = $1 AND state = 'RUNNING' AND attempts = $2`;
    if (c.job_attempts > c.job_max_attempts) {
      await db.transaction(
        (tx) =>
          tx.query(
            `UPDATE memory.jobs SET state = 'DEAD', locked_until = NULL, updated_at = $3,
                    attempts = $2 - 1, last_error = coalesce(last_error, 'lease expired') ${mine}`,
            [job.jobId, job.attempt, now.toISOString()],
          ),
        settings,
      );
      pass.dead++;
      continue;
    }
    try {
      const done = await db.transaction(async (tx) => {
        await opts.beforeIndex?.(job);
        const indexed = await indexRecord(tx, job, opts.chunking ?? DEFAULT_CHUNKING);
        await tx.query(
          `UPDATE memory.jobs SET state = 'SUCCEEDED', locked_until = NULL, last_error = NULL, updated_at = $3 ${mine}`,
          [job.jobId, job.attempt, now.toISOString()],
        );
        return indexed;
      }, settings);
      if (done) pass.succeeded++;
      else pass.skipped++;
    } catch (err) {
      const dead = job.attempt >= c.job_max_attempts;
      const runAfter = new Date(now.getTime() + (opts.backoffMs ?? defaultBackoffMs)(job.attempt));
      await db.transaction(
        (tx) =>
          tx.query(
            `UPDATE memory.jobs SET state = $3, last_error = $4, run_after = $5, locked_until = NULL, updated_at = $6
              ${mine}`,
            [
              job.jobId,
              job.attempt,
              dead ? 'DEAD' : 'FAILED',
              errorText(err),
              runAfter.toISOString(),
              now.toISOString(),
            ],
          ),
        settings,
      );
      if (dead) pass.dead++;
      else pass.failed++;
    }
  }
  return pass;
}

export interface IndexingWorker {
  stop(): Promise<void>;
}

/**
 * Runs passes until stopped: after each NOTIFY on memory_jobs, and every `intervalMs` (retries and leases come due
 * by time, not by notification). A pass that claimed a full batch runs again at once.
 */
export function startIndexingWorker(
  opts: IndexingOptions & { db: Database; log: Logger; intervalMs?: number },
): IndexingWorker {
  const interval = opts.intervalMs ?? 1000;
  const batch = opts.batch ?? 20;
  let stopped = false;
  let running: Promise<void> | null = null;
  let again = false;
  let timer: NodeJS.Timeout | null = null;
  let unlisten: (() => Promise<void>) | null = null;
  const schedule = (ms: number) => {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(kick, ms).unref();
  };
  const kick = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = runIndexingJobs(opts.db, opts)
      .then((p) => {
        if (p.failed || p.dead) opts.log.warn('memory indexing pass had failures', { ...p });
        if (p.succeeded + p.failed + p.dead + p.skipped >= batch) again = true;
      })
      .catch((err: unknown) => opts.log.error('memory indexing pass failed', { error: err }))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          schedule(0);
        } else schedule(interval);
      });
  };
  const listening = opts.db
    .listen(
      JOBS_CHANNEL,
      () => kick(),
      () => kick(),
    )
    .then((u) => {
      if (stopped) return u();
      unlisten = u;
    })
    .catch((err: unknown) =>
      opts.log.error('memory indexing could not listen; polling only', { error: err }),
    );
  schedule(0);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await listening;
      await unlisten?.();
      await running;
    },
  };
}
