/**
 * SQL of the supply chain: uploads, analyses, the audit trail (review_events) and the review queue. Every function
 * takes a tenant transaction (RLS); nothing here filters by tenant by hand.
 */
import {
  cursorTime,
  type AuthContext,
  type Keyed,
  type KeysetAfter as After,
  type Queryable,
} from '@agentgraph/runtime';
import type { ReviewAction } from './generated/resolvers.js';
import {
  toAnalysis,
  toDecision,
  toPlugin,
  toRelease,
  type AnalysisModel,
  type AnalysisRow,
  type ChannelName,
  type DecisionModel,
  type DecisionRow,
  type FindingModel,
  type PluginModel,
  type PluginRow,
  type ReleaseModel,
  type ReleaseRow,
} from './models.js';
import { PLUGIN_AS, RELEASE, pluginOf, type Prefixed } from './store.js';

const ANALYSIS =
  'a.id, a.release_id, a.state, a.verdict, a.reason, a.findings, a.attempts, a.started_at, a.finished_at, a.envelope, a.key_id';

export async function findPluginByName(tx: Queryable, name: string): Promise<PluginModel | null> {
  const r = await tx.query<PluginRow>(
    `SELECT p.id, p.name, p.display_name, p.description, p.publisher, p.created_at
       FROM catalog.plugins p WHERE p.name = $1`,
    [name],
  );
  return r.rows[0] ? toPlugin(r.rows[0]) : null;
}

/** The release of a plugin and version, declared now by the caller if it was not. */
export async function releaseForUpload(
  tx: Queryable,
  auth: AuthContext,
  plugin: PluginModel,
  version: string,
): Promise<ReleaseModel> {
  await tx.query(
    `INSERT INTO catalog.releases (tenant_id, plugin_id, version, created_by) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, plugin_id, version) DO NOTHING`,
    [auth.tenantId, plugin.id, version, auth.principalId],
  );
  const r = await tx.query<ReleaseRow>(
    `SELECT ${RELEASE} FROM catalog.releases r WHERE r.plugin_id = $1 AND r.version = $2`,
    [plugin.id, version],
  );
  return toRelease(r.rows[0]!, plugin);
}

export interface UploadedPackage {
  storageKey: string;
  sizeBytes: number;
  sha256: string;
  sha512: string;
}

/**
 * Records the upload: the release (still AWAITING_UPLOAD, else null: someone else's upload won) becomes
 * QUARANTINED with its digests, an analysis is queued, and the step is audited.
 */
export async function recordUpload(
  tx: Queryable,
  auth: AuthContext,
  releaseId: string,
  pkg: UploadedPackage,
  now: Date,
): Promise<ReleaseRow | null> {
  const r = await tx.query<ReleaseRow>(
    `UPDATE catalog.releases r SET state = 'QUARANTINED', storage_key = $2, size_bytes = $3, sha256 = $4,
            sha512 = $5, uploaded_by = $6, uploaded_at = $7, updated_at = $7
      WHERE r.id = $1 AND r.state = 'AWAITING_UPLOAD'
      RETURNING ${RELEASE}`,
    [releaseId, pkg.storageKey, pkg.sizeBytes, pkg.sha256, pkg.sha512, auth.principalId, now.toISOString()],
  );
  if (!r.rows[0]) return null;
  await tx.query(`INSERT INTO catalog.analyses (tenant_id, release_id, created_at) VALUES ($1, $2, $3)`, [
    auth.tenantId,
    releaseId,
    now.toISOString(),
  ]);
  await recordEvent(tx, auth.tenantId, releaseId, 'UPLOADED', auth.principalId, now);
  return r.rows[0];
}

export async function recordEvent(
  tx: Queryable,
  tenantId: string,
  releaseId: string,
  action: ReviewAction,
  actor: string,
  now: Date,
  extra: { reason?: string | null; channel?: ChannelName | null } = {},
): Promise<void> {
  await tx.query(
    `INSERT INTO catalog.review_events (tenant_id, release_id, action, actor, reason, channel, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [tenantId, releaseId, action, actor, extra.reason ?? null, extra.channel ?? null, now.toISOString()],
  );
}

export interface LockedRelease extends ReleaseModel {
  uploadedBy: string | null;
  storageKey: string | null;
}

/** The release with its plugin, locked for this transaction (decisions on one release serialise). */
export async function lockRelease(tx: Queryable, id: string): Promise<LockedRelease | null> {
  const r = await tx.query<ReleaseRow & Prefixed & { storage_key: string | null }>(
    `SELECT ${RELEASE}, r.storage_key, ${PLUGIN_AS}
       FROM catalog.releases r
       JOIN catalog.plugins p ON p.tenant_id = r.tenant_id AND p.id = r.plugin_id
      WHERE r.id = $1 FOR UPDATE OF r`,
    [id],
  );
  const row = r.rows[0];
  if (!row) return null;
  return { ...toRelease(row, pluginOf(row)), uploadedBy: row.uploaded_by, storageKey: row.storage_key };
}

export async function setReleaseState(
  tx: Queryable,
  id: string,
  state: ReleaseModel['state'],
  now: Date,
  extra: { reason?: string | null; channel?: ChannelName | null } = {},
): Promise<void> {
  await tx.query(
    `UPDATE catalog.releases SET state = $2, state_reason = $3, channel = $4, updated_at = $5 WHERE id = $1`,
    [id, state, extra.reason ?? null, extra.channel ?? null, now.toISOString()],
  );
}

export async function findAnalyses(
  tx: Queryable,
  releaseIds: readonly string[],
): Promise<Map<string, AnalysisModel>> {
  const r = await tx.query<AnalysisRow>(
    `SELECT ${ANALYSIS} FROM catalog.analyses a WHERE a.release_id = ANY($1::uuid[])`,
    [releaseIds],
  );
  return new Map(r.rows.map((row) => [row.release_id, toAnalysis(row)]));
}

export async function targetPaths(
  tx: Queryable,
  releaseIds: readonly string[],
): Promise<Map<string, string>> {
  const r = await tx.query<{ release_id: string; path: string }>(
    `SELECT release_id, path FROM catalog.tuf_targets WHERE release_id = ANY($1::uuid[])`,
    [releaseIds],
  );
  return new Map(r.rows.map((row) => [row.release_id, row.path]));
}

export async function listDecisions(
  tx: Queryable,
  releaseId: string,
  limit: number,
  after: After | null,
): Promise<Keyed<DecisionModel>[]> {
  const r = await tx.query<DecisionRow & { seq_text: string }>(
    `SELECT e.id, e.action, e.actor, e.reason, e.channel, e.created_at, e.seq::text AS seq_text
       FROM catalog.review_events e
      WHERE e.release_id = $1 ${after ? 'AND e.seq > $3::bigint' : ''}
      ORDER BY e.seq LIMIT $2`,
    after ? [releaseId, limit, after.value] : [releaseId, limit],
  );
  return r.rows.map((row) => ({ node: toDecision(row), key: { value: row.seq_text, id: row.id } }));
}

export async function listReviewQueue(
  tx: Queryable,
  limit: number,
  after: After | null,
): Promise<Keyed<ReleaseModel>[]> {
  const r = await tx.query<ReleaseRow & Prefixed & { sort_time: string }>(
    `SELECT ${RELEASE}, ${PLUGIN_AS}, ${cursorTime('r.uploaded_at')} AS sort_time
       FROM catalog.releases r
       JOIN catalog.plugins p ON p.tenant_id = r.tenant_id AND p.id = r.plugin_id
      WHERE r.state = 'IN_REVIEW'
      ${after ? 'AND (r.uploaded_at, r.id) > ($2::timestamptz, $3::uuid)' : ''}
      ORDER BY r.uploaded_at, r.id LIMIT $1`,
    after ? [limit, after.value, after.id] : [limit],
  );
  return r.rows.map((row) => ({
    node: toRelease(row, pluginOf(row)),
    key: { value: row.sort_time, id: row.id },
  }));
}

/** Writes the outcome of a RUNNING analysis attempt; false when the attempt is no longer the current one. */
export async function finishAnalysis(
  tx: Queryable,
  analysisId: string,
  attempt: number,
  outcome: {
    state: 'SUCCEEDED' | 'FAILED';
    verdict: 'PASS' | 'FAIL';
    reason: string | null;
    findings: FindingModel[];
    envelope: string;
    keyId: string;
  },
  now: Date,
): Promise<boolean> {
  const r = await tx.query(
    `UPDATE catalog.analyses SET state = $3, verdict = $4, reason = $5, findings = $6, envelope = $7, key_id = $8,
            finished_at = $9
      WHERE id = $1 AND state = 'RUNNING' AND attempts = $2 RETURNING id`,
    [
      analysisId,
      attempt,
      outcome.state,
      outcome.verdict,
      outcome.reason,
      JSON.stringify(outcome.findings),
      outcome.envelope,
      outcome.keyId,
      now.toISOString(),
    ],
  );
  return r.rows.length === 1;
}
