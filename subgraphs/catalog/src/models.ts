/**
 * What resolvers pass around (codegen mappers, see ../codegen.json). Plain JSON (dates as ISO strings) because
 * mutation payloads are stored as the idempotent response and replayed verbatim.
 */
import type { AnalysisState, AnalysisVerdict, ReleaseState, ReviewAction } from './generated/resolvers.js';

export type ChannelName = 'alpha' | 'beta' | 'stable';

export interface PluginModel {
  id: string;
  name: string;
  displayName: string;
  description: string;
  publisherId: string;
  createdAt: string;
}

export interface PackageModel {
  sizeBytes: number;
  sha256: string;
  sha512: string;
  uploadedById: string;
  uploadedAt: string;
}

export interface ReleaseModel {
  id: string;
  /** Loaded with the release (one query), so Release.plugin needs no second round trip. */
  plugin: PluginModel;
  version: string;
  state: ReleaseState;
  createdById: string;
  createdAt: string;
  stateReason: string | null;
  package: PackageModel | null;
  channel: ChannelName | null;
}

export interface FindingModel {
  rule: string;
  path?: string;
  message: string;
}

export interface AnalysisModel {
  id: string;
  releaseId: string;
  state: AnalysisState;
  verdict: AnalysisVerdict | null;
  reason: string | null;
  findings: FindingModel[];
  attempts: number;
  startedAt: string | null;
  finishedAt: string | null;
  envelope: string | null;
  keyId: string | null;
}

export interface DecisionModel {
  id: string;
  action: ReviewAction;
  actorId: string;
  reason: string | null;
  channel: ChannelName | null;
  at: string;
}

export interface PluginRow {
  id: string;
  name: string;
  display_name: string;
  description: string;
  publisher: string;
  created_at: Date | string;
}

export interface ReleaseRow {
  id: string;
  plugin_id: string;
  version: string;
  state: ReleaseState;
  created_by: string;
  created_at: Date | string;
  state_reason: string | null;
  size_bytes: string | number | null;
  sha256: string | null;
  sha512: string | null;
  uploaded_by: string | null;
  uploaded_at: Date | string | null;
  channel: ChannelName | null;
}

export interface AnalysisRow {
  id: string;
  release_id: string;
  state: AnalysisState;
  verdict: AnalysisVerdict | null;
  reason: string | null;
  findings: FindingModel[] | string;
  attempts: number;
  started_at: Date | string | null;
  finished_at: Date | string | null;
  envelope: string | null;
  key_id: string | null;
}

export interface DecisionRow {
  id: string;
  action: ReviewAction;
  actor: string;
  reason: string | null;
  channel: ChannelName | null;
  created_at: Date | string;
}

export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

const isoOrNull = (value: Date | string | null): string | null => (value === null ? null : iso(value));

export function toPlugin(row: PluginRow): PluginModel {
  return {
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    description: row.description,
    publisherId: row.publisher,
    createdAt: iso(row.created_at),
  };
}

export function toRelease(row: ReleaseRow, plugin: PluginModel): ReleaseModel {
  return {
    id: row.id,
    plugin,
    version: row.version,
    state: row.state,
    createdById: row.created_by,
    createdAt: iso(row.created_at),
    stateReason: row.state_reason,
    package:
      row.sha256 && row.sha512 && row.uploaded_by && row.uploaded_at && row.size_bytes !== null
        ? {
            sizeBytes: Number(row.size_bytes),
            sha256: row.sha256,
            sha512: row.sha512,
            uploadedById: row.uploaded_by,
            uploadedAt: iso(row.uploaded_at),
          }
        : null,
    channel: row.channel,
  };
}

export function toAnalysis(row: AnalysisRow): AnalysisModel {
  return {
    id: row.id,
    releaseId: row.release_id,
    state: row.state,
    verdict: row.verdict,
    reason: row.reason,
    findings: typeof row.findings === 'string' ? (JSON.parse(row.findings) as FindingModel[]) : row.findings,
    attempts: row.attempts,
    startedAt: isoOrNull(row.started_at),
    finishedAt: isoOrNull(row.finished_at),
    envelope: row.envelope,
    keyId: row.key_id,
  };
}

export function toDecision(row: DecisionRow): DecisionModel {
  return {
    id: row.id,
    action: row.action,
    actorId: row.actor,
    reason: row.reason,
    channel: row.channel,
    at: iso(row.created_at),
  };
}
