/**
 * What resolvers pass around for Workspace and MemoryRecord (codegen mappers, see ../codegen.json). Plain JSON
 * (dates as ISO strings) because mutation payloads are stored as the idempotent response and replayed verbatim.
 */

export interface WorkspaceModel {
  id: string;
  name: string;
  createdById: string;
  createdAt: string;
  secretPolicy: 'REJECT' | 'REDACT';
  embeddingDimensions: number | null;
}

export interface MemoryRecordModel {
  id: string;
  /** Loaded with the record (one query), so MemoryRecord.workspace needs no second round trip. */
  workspace: WorkspaceModel;
  kind: string;
  content: string;
  tags: string[];
  version: number;
  authorId: string;
  createdAt: string;
  updatedAt: string;
  /** JSON object text. */
  metadata: string;
  embedding: number[] | null;
  expiresAt: string | null;
}

export interface WorkspaceRow {
  id: string;
  name: string;
  created_by: string;
  created_at: Date | string;
  secret_policy: 'REJECT' | 'REDACT';
  embedding_dim: number | null;
}

export interface RecordRow {
  id: string;
  workspace_id: string;
  kind: string;
  content: string;
  tags: string[];
  version: number;
  author: string;
  created_at: Date | string;
  updated_at: Date | string;
  metadata: Record<string, unknown> | string;
  embedding: number[] | null;
  expires_at: Date | string | null;
}

export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function toWorkspace(row: WorkspaceRow): WorkspaceModel {
  return {
    id: row.id,
    name: row.name,
    createdById: row.created_by,
    createdAt: iso(row.created_at),
    secretPolicy: row.secret_policy,
    embeddingDimensions: row.embedding_dim ?? null,
  };
}

export function toRecord(row: RecordRow, workspace: WorkspaceModel): MemoryRecordModel {
  return {
    id: row.id,
    workspace,
    kind: row.kind,
    content: row.content,
    tags: row.tags,
    version: row.version,
    authorId: row.author,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    metadata: typeof row.metadata === 'string' ? row.metadata : JSON.stringify(row.metadata ?? {}),
    embedding: row.embedding ? row.embedding.map(Number) : null,
    expiresAt: row.expires_at == null ? null : iso(row.expires_at),
  };
}

export type MemoryJobState = 'QUEUED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'DEAD';

export interface MemoryJobModel {
  id: string;
  recordId: string;
  workspaceId: string;
  state: MemoryJobState;
  attempts: number;
  lastError: string | null;
  runAfter: string;
  createdAt: string;
  updatedAt: string;
}

export interface JobRow {
  id: string;
  record_id: string;
  workspace_id: string;
  state: MemoryJobState;
  attempts: number;
  last_error: string | null;
  run_after: Date | string;
  created_at: Date | string;
  updated_at: Date | string;
}

export function toJob(row: JobRow): MemoryJobModel {
  return {
    id: row.id,
    recordId: row.record_id,
    workspaceId: row.workspace_id,
    state: row.state,
    attempts: row.attempts,
    lastError: row.last_error,
    runAfter: iso(row.run_after),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

/** One search hit: the record and its scores (see Query.searchMemory). */
export interface SearchHit {
  record: MemoryRecordModel;
  score: number;
  textScore: number | null;
  vectorScore: number | null;
}
