/**
 * The analysis queue. A job is a row of catalog.analyses; `runOnce` claims the oldest due one (QUEUED, or RUNNING
 * but started longer ago than the analyzer's time limit plus a grace period: its process died), runs the sandboxed
 * analyzer on the package, signs the result (in-toto statement in a DSSE envelope) and moves the release to
 * IN_REVIEW (passed) or ANALYSIS_FAILED (findings, or the analyzer failed: the reason says which). A job that
 * was claimed MAX_ATTEMPTS times without finishing fails instead of running again, so nothing stays stuck.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import type { Database, KeyVault, Logger, Queryable } from '@agentgraph/runtime';
import type { FindingModel } from '../models.js';
import type { PackageStore } from '../packages/package-store.js';
import { finishAnalysis, recordEvent, setReleaseState } from '../pipeline-store.js';
import { analyzerKey, signEnvelope, statementFor } from '../analyzer/attestation.js';
import { runSandbox, type SandboxLimits, type SandboxOutcome } from '../analyzer/run-sandbox.js';

export const MAX_ATTEMPTS = 3;
const STALE_GRACE_MS = 5_000;
const ANALYZER = { name: 'agentgraph-catalog-analyzer', version: '1' };

export interface AnalysisRunnerOptions {
  db: Database;
  /** Seals and opens the tenants' analyzer keys (the server's key-encryption keys). */
  vault: KeyVault;
  log: Logger;
  store: PackageStore;
  now: () => Date;
  /** Read for every job (limits may change while the server runs). */
  limits: () => SandboxLimits;
}

export interface AnalysisRunner {
  /** Claims and runs one due job; false when there was none. */
  runOnce(): Promise<boolean>;
  /** Runs jobs until none is due (one at a time); concurrent calls share the same run. */
  drain(): Promise<void>;
  /** Starts a drain in the background (after an upload). */
  kick(): void;
  /** Waits for the running drain. */
  stop(): Promise<void>;
}

interface Claimed {
  tenant_id: string;
  id: string;
  release_id: string;
  attempts: number;
}

export function summarise(findings: FindingModel[]): string {
  const first = findings
    .slice(0, 3)
    .map((f) => `${f.rule}${f.path ? ` (${f.path})` : ''}: ${f.message}`)
    .join('; ');
  return (findings.length > 3 ? `${first}; and ${findings.length - 3} more` : first).slice(0, 2000);
}

export function createAnalysisRunner(opts: AnalysisRunnerOptions): AnalysisRunner {
  const { db, log, store, now } = opts;
  let draining: Promise<void> | null = null;
  let stopped = false;

  const inTenant = <T>(tenantId: string, fn: (tx: Queryable) => Promise<T>) =>
    db.transaction(fn, { 'app.tenant_id': tenantId, 'app.principal_id': 'system' });

  const analyse = async (
    storageKey: string,
    expected: { plugin: string; version: string },
    limits: SandboxLimits,
  ): Promise<SandboxOutcome> => {
    const local = store.localPath?.(storageKey);
    if (local) return runSandbox(local, expected, limits);
    // An object store: copy the package to a private temporary file the analyzer may read.
    const dir = await mkdtemp(join(tmpdir(), 'catalog-analysis-'));
    try {
      const path = join(dir, 'package.zip');
      const data = await store.get(storageKey);
      if (!data) return { kind: 'failed', reason: 'the package is missing from storage' };
      await pipeline(data, createWriteStream(path, { mode: 0o600 }));
      return await runSandbox(path, expected, limits);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  const runOnce = async (): Promise<boolean> => {
    const at = now();
    const limits = opts.limits();
    const staleBefore = new Date(at.getTime() - limits.timeoutMs - STALE_GRACE_MS);
    const claimed = await db.query<Claimed>(
      'SELECT tenant_id, id, release_id, attempts FROM catalog.claim_analysis($1, $2)',
      [at.toISOString(), staleBefore.toISOString()],
    );
    const job = claimed.rows[0];
    if (!job) return false;
    const release = await inTenant(job.tenant_id, async (tx) => {
      const r = await tx.query<{
        storage_key: string;
        version: string;
        name: string;
        sha256: string;
        sha512: string;
      }>(
        `SELECT r.storage_key, r.version, p.name, r.sha256, r.sha512 FROM catalog.releases r
           JOIN catalog.plugins p ON p.tenant_id = r.tenant_id AND p.id = r.plugin_id WHERE r.id = $1`,
        [job.release_id],
      );
      return r.rows[0]!;
    });
    let outcome: SandboxOutcome;
    if (job.attempts > MAX_ATTEMPTS) {
      outcome = {
        kind: 'failed',
        reason: `the analysis did not finish in ${MAX_ATTEMPTS} attempts (the analyzer's process kept dying)`,
      };
    } else {
      outcome = await analyse(
        release.storage_key,
        { plugin: release.name, version: release.version },
        limits,
      );
    }
    const findings = outcome.kind === 'analysed' ? outcome.findings : [];
    const passed = outcome.kind === 'analysed' && findings.length === 0;
    const reason = outcome.kind === 'failed' ? outcome.reason : passed ? null : summarise(findings);
    const finishedAt = now();
    await inTenant(job.tenant_id, async (tx) => {
      const key = await analyzerKey(tx, job.tenant_id, opts.vault);
      const statement = statementFor(
        { name: `${release.name}-${release.version}.zip`, sha256: release.sha256, sha512: release.sha512 },
        {
          verdict: passed ? 'PASS' : 'FAIL',
          reason,
          findings,
          analyzer: ANALYZER,
          analysedAt: finishedAt.toISOString(),
          plugin: release.name,
          version: release.version,
        },
      );
      const envelope = signEnvelope(statement, key);
      const current = await finishAnalysis(
        tx,
        job.id,
        job.attempts,
        {
          state: outcome.kind === 'failed' ? 'FAILED' : 'SUCCEEDED',
          verdict: passed ? 'PASS' : 'FAIL',
          reason,
          findings,
          envelope: JSON.stringify(envelope),
          keyId: key.keyId,
        },
        finishedAt,
      );
      if (!current) return; // another process took the job over meanwhile; its result counts
      await setReleaseState(tx, job.release_id, passed ? 'IN_REVIEW' : 'ANALYSIS_FAILED', finishedAt, {
        reason,
      });
      await recordEvent(
        tx,
        job.tenant_id,
        job.release_id,
        passed ? 'ANALYSIS_PASSED' : 'ANALYSIS_FAILED',
        'system',
        finishedAt,
        { reason },
      );
    });
    log.info('package analysed', {
      releaseId: job.release_id,
      outcome: outcome.kind,
      passed,
      findings: findings.length,
    });
    return true;
  };

  // A drain asked for while one runs makes that one look again before it ends (a job queued just after its
  // last empty claim is not left for the next poll).
  let again = false;
  const drain = (): Promise<void> => {
    again = true;
    draining ??= (async () => {
      try {
        while (again && !stopped) {
          again = false;
          while (!stopped && (await runOnce()));
        }
      } finally {
        draining = null;
      }
    })();
    return draining;
  };

  return {
    runOnce,
    drain,
    kick() {
      drain().catch((error: unknown) => log.error('analysis queue failed', { error }));
    },
    async stop() {
      stopped = true;
      await draining?.catch(() => undefined);
    },
  };
}
