/**
 * The intent sweeper: QUEUED / DELIVERED / LOCALLY_APPROVED intents past their expiry become EXPIRED, EXECUTING
 * intents past their execution deadline become OUTCOME_UNKNOWN. `sweepIntents(db, now)` does one pass at a given
 * time (tests call it with a fake clock); `startIntentSweeper` runs it in the background of the coordination
 * module. Each change runs in its tenant's transaction through store.transition (event, outbox, NOTIFY); an
 * intent that changed in between (a report raced the sweep) is skipped, not overwritten.
 */
import { AppError, runPeriodically, type Database, type Logger, type Metrics } from '@agentgraph/runtime';
import type { IntentState } from './machine.js';
import { transition } from './store.js';

export interface SweepResult {
  expired: number;
  outcomeUnknown: number;
  /** Changed by someone else between the scan and the write. */
  skipped: number;
}

/** Intents handled per pass at most (per kind); the next pass takes the rest. */
export const SWEEP_BATCH = 500;

export async function sweepIntents(db: Database, now: Date, batch = SWEEP_BATCH): Promise<SweepResult> {
  const due = await db.query<{ tenant_id: string; id: string; state: IntentState }>(
    'SELECT tenant_id, id, state FROM coordination.due_intents($1, $2)',
    [now.toISOString(), batch],
  );
  const result: SweepResult = { expired: 0, outcomeUnknown: 0, skipped: 0 };
  for (const row of due.rows) {
    const to: IntentState = row.state === 'EXECUTING' ? 'OUTCOME_UNKNOWN' : 'EXPIRED';
    try {
      await db.transaction(
        (tx) =>
          transition(tx, {
            intentId: row.id,
            to,
            source: 'server',
            actor: 'system',
            reason:
              to === 'EXPIRED' ? 'expired before it was executed' : 'no outcome reported before the deadline',
            at: now,
            expectedState: row.state,
          }),
        { 'app.tenant_id': row.tenant_id, 'app.principal_id': 'system' },
      );
      if (to === 'EXPIRED') result.expired++;
      else result.outcomeUnknown++;
    } catch (err) {
      if (err instanceof AppError && err.code === 'VERSION_CONFLICT') result.skipped++;
      else throw err;
    }
  }
  return result;
}

/** Outbox rows are kept this long (relays and debugging; live listeners never need them). */
export const OUTBOX_RETENTION_SECONDS = 3600;
/** Report jtis are kept this long: a report's iat must be within 60 s of the server, so 10 min is ample. */
export const REPORT_JTI_RETENTION_SECONDS = 600;
/** The sweeper purges bookkeeping every this many passes (once a minute at the default 1 s interval). */
const PURGE_EVERY_PASSES = 60;

/** Deletes outbox rows and report jtis older than their retention (database clock). */
export async function purgeIntentBookkeeping(
  db: Database,
  outboxAgeSeconds = OUTBOX_RETENTION_SECONDS,
  jtiAgeSeconds = REPORT_JTI_RETENTION_SECONDS,
): Promise<{ outbox: number; jtis: number }> {
  const r = await db.query<{ outbox: string | number; jtis: string | number }>(
    'SELECT outbox, jtis FROM coordination.purge_intent_bookkeeping($1, $2)',
    [outboxAgeSeconds, jtiAgeSeconds],
  );
  return { outbox: Number(r.rows[0]!.outbox), jtis: Number(r.rows[0]!.jtis) };
}

export function startIntentSweeper(opts: {
  db: Database;
  log: Logger;
  now: () => Date;
  intervalMs?: number;
  /** Counts the sweeper's transitions (EXPIRED, OUTCOME_UNKNOWN). */
  metrics?: Pick<Metrics, 'intentTransition'>;
}): () => Promise<void> {
  let passes = 0;
  return runPeriodically({
    intervalMs: opts.intervalMs ?? 1000,
    log: opts.log,
    failureMessage: 'intent sweep failed',
    run: async () => {
      const r = await sweepIntents(opts.db, opts.now());
      if (r.expired || r.outcomeUnknown) opts.log.info('intent sweep', { ...r });
      for (let i = 0; i < r.expired; i++) opts.metrics?.intentTransition('EXPIRED');
      for (let i = 0; i < r.outcomeUnknown; i++) opts.metrics?.intentTransition('OUTCOME_UNKNOWN');
      if (++passes % PURGE_EVERY_PASSES === 0) {
        const purged = await purgeIntentBookkeeping(opts.db);
        if (purged.outbox || purged.jtis) opts.log.info('intent bookkeeping purged', purged);
      }
    },
  });
}
