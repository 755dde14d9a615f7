/**
 * The memory subgraph's SQL. Every function takes a transaction opened by withTenant (or idempotentMutation), so
 * Row-Level Security limits it to the caller's tenant; nothing here filters by tenant by hand.
 */
import {
  AppError,
  badInput,
  notFound,
  type AuthContext,
  type Queryable,
  cursorTime,
  type KeysetAfter as After,
  type Keyed,
} from '@agentgraph/runtime';
import {
  toRecord,
  toWorkspace,
  type MemoryRecordModel,
  type RecordRow,
  type WorkspaceModel,
  type WorkspaceRow,
} from './models.js';

const WORKSPACE = 'w.id, w.name, w.created_by, w.created_at';
const RECORD =
  'r.id, r.workspace_id, r.kind, r.content, r.tags, r.version, r.author, r.created_at, r.updated_at';

export async function createWorkspace(
  tx: Queryable,
  auth: AuthContext,
  name: string,
): Promise<WorkspaceModel> {
  const r = await tx.query<WorkspaceRow>(
    `INSERT INTO memory.workspaces AS w (tenant_id, name, created_by) VALUES ($1, $2, $3) RETURNING ${WORKSPACE}`,
    [auth.tenantId, name, auth.principalId],
  );
  return toWorkspace(r.rows[0]!);
}

export async function findWorkspace(tx: Queryable, id: string): Promise<WorkspaceModel | null> {
  return (await findWorkspaces(tx, [id])).get(id) ?? null;
}

/** Workspaces by id (lowercase uuids), for entity references batched per request. */
export async function findWorkspaces(
  tx: Queryable,
  ids: readonly string[],
): Promise<Map<string, WorkspaceModel>> {
  const r = await tx.query<WorkspaceRow>(
    `SELECT ${WORKSPACE} FROM memory.workspaces w WHERE w.id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((row) => [row.id, toWorkspace(row)]));
}

export async function listWorkspaces(
  tx: Queryable,
  limit: number,
  after: After | null,
): Promise<Keyed<WorkspaceModel>[]> {
  const r = await tx.query<WorkspaceRow & { sort_time: string }>(
    `SELECT ${WORKSPACE}, ${cursorTime('w.created_at')} AS sort_time FROM memory.workspaces w
      ${after ? 'WHERE (w.created_at, w.id) < ($2::timestamptz, $3::uuid)' : ''}
      ORDER BY w.created_at DESC, w.id DESC LIMIT $1`,
    after ? [limit, after.value, after.id] : [limit],
  );
  return r.rows.map((row) => ({ node: toWorkspace(row), key: { value: row.sort_time, id: row.id } }));
}

/** Records by id (lowercase uuids) with their workspace, in one query; batched per request. */
export async function findRecords(
  tx: Queryable,
  ids: readonly string[],
): Promise<Map<string, MemoryRecordModel>> {
  const r = await tx.query<
    RecordRow & { w_id: string; w_name: string; w_created_by: string; w_created_at: Date }
  >(
    `SELECT ${RECORD}, w.id AS w_id, w.name AS w_name, w.created_by AS w_created_by, w.created_at AS w_created_at
       FROM memory.records r
       JOIN memory.workspaces w ON w.tenant_id = r.tenant_id AND w.id = r.workspace_id
      WHERE r.id = ANY($1::uuid[])`,
    [ids],
  );
  const workspace = (row: (typeof r.rows)[number]) =>
    toWorkspace({
      id: row.w_id,
      name: row.w_name,
      created_by: row.w_created_by,
      created_at: row.w_created_at,
    });
  return new Map(r.rows.map((row) => [row.id, toRecord(row, workspace(row))]));
}

export async function listRecords(
  tx: Queryable,
  workspace: WorkspaceModel,
  limit: number,
  after: After | null,
): Promise<Keyed<MemoryRecordModel>[]> {
  const r = await tx.query<RecordRow & { sort_time: string }>(
    `SELECT ${RECORD}, ${cursorTime('r.updated_at')} AS sort_time FROM memory.records r
      WHERE r.workspace_id = $1
      ${after ? 'AND (r.updated_at, r.id) < ($3::timestamptz, $4::uuid)' : ''}
      ORDER BY r.updated_at DESC, r.id DESC LIMIT $2`,
    after ? [workspace.id, limit, after.value, after.id] : [workspace.id, limit],
  );
  return r.rows.map((row) => ({ node: toRecord(row, workspace), key: { value: row.sort_time, id: row.id } }));
}

export interface PutRecord {
  id: string;
  workspaceId: string;
  kind: string;
  content: string;
  tags: string[];
  /** null: unconditional; 0: must not exist; n: the stored version must be n. */
  expectedVersion: number | null;
}

function versionConflict(currentVersion: number): AppError {
  return new AppError(
    'VERSION_CONFLICT',
    currentVersion === 0
      ? 'The memory record does not exist, so it is not at the expectedVersion you sent. Re-read it, then write with expectedVersion 0 (create) or null.'
      : `The memory record is at version ${currentVersion}, not the expectedVersion you sent. Re-read it, re-apply your change, and write with expectedVersion ${currentVersion}.`,
    { currentVersion },
  );
}

/**
 * Create or replace a record under its client-chosen id (PUT). Concurrent writers of one record serialise on the
 * row lock (SELECT ... FOR UPDATE) and each sees the version the previous one committed, so an expectedVersion
 * check can never pass twice for one version: no lost update. Two creators race on the primary key instead:
 * INSERT ... ON CONFLICT DO NOTHING waits for the other's commit, and the loser goes round again as an update.
 */
export async function putRecord(
  tx: Queryable,
  auth: AuthContext,
  put: PutRecord,
): Promise<{ record: MemoryRecordModel; created: boolean }> {
  const workspace = await findWorkspace(tx, put.workspaceId);
  if (!workspace) throw notFound('The workspace (input.workspaceId)');
  for (let attempt = 0; attempt < 2; attempt++) {
    const current = await tx.query<{ workspace_id: string; version: number }>(
      'SELECT workspace_id, version FROM memory.records WHERE id = $1 FOR UPDATE',
      [put.id],
    );
    const row = current.rows[0];
    if (row) {
      if (row.workspace_id !== workspace.id) {
        throw badInput(
          'A memory record with this id already exists in another workspace of your tenant. Record ids are unique per tenant: write it to its own workspace, or use a new id.',
          { field: 'id' },
        );
      }
      if (put.expectedVersion != null && put.expectedVersion !== row.version) {
        throw versionConflict(row.version);
      }
      const updated = await tx.query<RecordRow>(
        `UPDATE memory.records AS r
            SET kind = $2, content = $3, tags = $4, author = $5, version = r.version + 1, updated_at = now()
          WHERE r.id = $1
          RETURNING ${RECORD}`,
        [put.id, put.kind, put.content, put.tags, auth.principalId],
      );
      return { record: toRecord(updated.rows[0]!, workspace), created: false };
    }
    if (put.expectedVersion != null && put.expectedVersion !== 0) throw versionConflict(0);
    const inserted = await tx.query<RecordRow>(
      `INSERT INTO memory.records AS r (tenant_id, id, workspace_id, kind, content, tags, version, author)
       VALUES ($1, $2, $3, $4, $5, $6, 1, $7)
       ON CONFLICT (tenant_id, id) DO NOTHING
       RETURNING ${RECORD}`,
      [auth.tenantId, put.id, workspace.id, put.kind, put.content, put.tags, auth.principalId],
    );
    if (inserted.rows[0]) return { record: toRecord(inserted.rows[0], workspace), created: true };
    // Another transaction created it after our look and has committed (ON CONFLICT waited for it): update it.
  }
  throw new Error('putRecord: the record neither exists nor could be inserted');
}
