/**
 * What resolvers pass around for Workspace and MemoryRecord (codegen mappers, see ../codegen.json). Plain JSON
 * (dates as ISO strings) because mutation payloads are stored as the idempotent response and replayed verbatim.
 */

export interface WorkspaceModel {
  id: string;
  name: string;
  createdById: string;
  createdAt: string;
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
}

export interface WorkspaceRow {
  id: string;
  name: string;
  created_by: string;
  created_at: Date | string;
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
}

export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function toWorkspace(row: WorkspaceRow): WorkspaceModel {
  return { id: row.id, name: row.name, createdById: row.created_by, createdAt: iso(row.created_at) };
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
  };
}
