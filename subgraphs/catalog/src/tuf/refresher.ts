/**
 * Timestamp re-signing on a schedule: every repository whose timestamp (or snapshot) expires within
 * `refreshBeforeSeconds` gets a new timestamp (and snapshot), each in its tenant's transaction. `refreshRepositories`
 * is one pass at a given time (tests call it with a fake clock); `startRefresher` runs it on an interval.
 */
import { runPeriodically, type Database, type KeyVault, type Logger } from '@agentgraph/runtime';
import { openRepository, refreshTimestamp, type TufSettings } from './repository.js';

export async function refreshRepositories(
  db: Database,
  now: Date,
  settings: TufSettings,
  vault: KeyVault,
): Promise<number> {
  const before = new Date(now.getTime() + settings.refreshBeforeSeconds * 1000);
  const due = await db.query<{ tenant_id: string }>(
    'SELECT tenant_id FROM catalog.tuf_repositories_due($1, $2)',
    [before.toISOString(), 500],
  );
  for (const { tenant_id } of due.rows) {
    await db.transaction(
      async (tx) => {
        const r = await tx.query<{ snapshot_expires_at: Date | string }>(
          'SELECT snapshot_expires_at FROM catalog.tuf_repositories WHERE tenant_id = $1',
          [tenant_id],
        );
        const snapshotDue = r.rows[0] ? new Date(r.rows[0].snapshot_expires_at) < before : false;
        const state = await openRepository(tx, tenant_id, now, settings, vault);
        await refreshTimestamp(tx, state, now, settings, { snapshot: snapshotDue });
      },
      { 'app.tenant_id': tenant_id, 'app.principal_id': 'system' },
    );
  }
  return due.rows.length;
}

export function startRefresher(opts: {
  db: Database;
  log: Logger;
  now: () => Date;
  settings: TufSettings;
  vault: KeyVault;
  intervalMs: number;
}): () => Promise<void> {
  return runPeriodically({
    intervalMs: opts.intervalMs,
    log: opts.log,
    failureMessage: 'tuf refresh failed',
    run: async () => {
      const n = await refreshRepositories(opts.db, opts.now(), opts.settings, opts.vault);
      if (n) opts.log.info('tuf timestamps re-signed', { repositories: n });
    },
  });
}
