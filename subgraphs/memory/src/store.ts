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
  eraseIdempotentResponses,
  type KeysetAfter as After,
  type Keyed,
} from '@agentgraph/runtime';
import {
  toJob,
  toRecord,
  toWorkspace,
  type JobRow,
  type MemoryJobModel,
  type MemoryJobState,
  type MemoryRecordModel,
  type RecordRow,
  type WorkspaceModel,
  type WorkspaceRow,
} from './models.js';
import { filterWrite, type Json } from './secrets/index.js';

export const WORKSPACE = 'w.id, w.name, w.created_by, w.created_at, w.secret_policy, w.embedding_dim';
export const RECORD =
  'r.id, r.workspace_id, r.kind, r.content, r.tags, r.version, r.author, r.created_at, r.updated_at, ' +
  'r.metadata, r.embedding, r.expires_at';
/** Visible records: not expired at the server clock's time (parameter `$n`, not SQL now(), so fake clocks work). */
export const notExpired = (param: string) => `(r.expires_at IS NULL OR r.expires_at > ${param}::timestamptz)`;

/** Woken on every enqueued indexing job (delivered on commit); the worker then claims what is due. */
export const JOBS_CHANNEL = 'memory_jobs';

export interface WorkspaceOptions {
  secretPolicy?: 'REJECT' | 'REDACT';
  embeddingDimensions?: number | null;
  /** The server clock's time (the creation rate limit counts by it); default: the database's now(). */
  createdAt?: Date;
}

export async function createWorkspace(
  tx: Queryable,
  auth: AuthContext,
  name: string,
  opts: WorkspaceOptions = {},
): Promise<WorkspaceModel> {
  const r = await tx.query<WorkspaceRow>(
    `INSERT INTO memory.workspaces AS w (tenant_id, name, created_by, secret_policy, embedding_dim, created_at)
     VALUES ($1, $2, $3, $4, $5, coalesce($6::timestamptz, now())) RETURNING ${WORKSPACE}`,
    [
      auth.tenantId,
      name,
      auth.principalId,
      opts.secretPolicy ?? 'REJECT',
      opts.embeddingDimensions ?? null,
      opts.createdAt?.toISOString() ?? null,
    ],
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

type RecordWithWorkspaceRow = RecordRow & {
  w_id: string;
  w_name: string;
  w_created_by: string;
  w_created_at: Date;
  w_secret_policy: 'REJECT' | 'REDACT';
  w_embedding_dim: number | null;
};
export const RECORD_WITH_WORKSPACE = `${RECORD}, w.id AS w_id, w.name AS w_name, w.created_by AS w_created_by,
  w.created_at AS w_created_at, w.secret_policy AS w_secret_policy, w.embedding_dim AS w_embedding_dim`;

export function toRecordWithWorkspace(row: RecordWithWorkspaceRow): MemoryRecordModel {
  return toRecord(
    row,
    toWorkspace({
      id: row.w_id,
      name: row.w_name,
      created_by: row.w_created_by,
      created_at: row.w_created_at,
      secret_policy: row.w_secret_policy,
      embedding_dim: row.w_embedding_dim,
    }),
  );
}

/** Records by id (lowercase uuids) with their workspace, in one query; batched per request. Expired ones are absent. */
export async function findRecords(
  tx: Queryable,
  ids: readonly string[],
  now: Date = new Date(),
): Promise<Map<string, MemoryRecordModel>> {
  const r = await tx.query<RecordWithWorkspaceRow>(
    `SELECT ${RECORD_WITH_WORKSPACE}
       FROM memory.records r
       JOIN memory.workspaces w ON w.tenant_id = r.tenant_id AND w.id = r.workspace_id
      WHERE r.id = ANY($1::uuid[]) AND ${notExpired('$2')}`,
    [ids, now.toISOString()],
  );
  return new Map(r.rows.map((row) => [row.id, toRecordWithWorkspace(row)]));
}

/** The SQL conditions (and their parameters, numbered from `first`) of a MemoryRecordFilter. */
export interface RecordFilterValues {
  kind: string | null;
  tag: string | null;
  authorId: string | null;
  updatedSince: Date | null;
}

export function filterSql(
  filter: RecordFilterValues | undefined,
  first: number,
): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const add = (cond: (p: string) => string, value: unknown) => {
    params.push(value);
    parts.push(cond(`$${first + params.length - 1}`));
  };
  if (filter?.kind != null) add((p) => `r.kind = ${p}`, filter.kind);
  if (filter?.tag != null) add((p) => `r.tags @> ARRAY[${p}::text]`, filter.tag);
  if (filter?.authorId != null) add((p) => `r.author = ${p}`, filter.authorId);
  if (filter?.updatedSince != null)
    add((p) => `r.updated_at >= ${p}::timestamptz`, filter.updatedSince.toISOString());
  return { sql: parts.map((c) => ` AND ${c}`).join(''), params };
}

export async function listRecords(
  tx: Queryable,
  workspace: WorkspaceModel,
  limit: number,
  after: After | null,
  filter?: RecordFilterValues,
  now: Date = new Date(),
): Promise<Keyed<MemoryRecordModel>[]> {
  const base = [workspace.id, limit, now.toISOString()];
  const position = after ? [after.value, after.id] : [];
  const f = filterSql(filter, base.length + position.length + 1);
  const r = await tx.query<RecordRow & { sort_time: string }>(
    `SELECT ${RECORD}, ${cursorTime('r.updated_at')} AS sort_time FROM memory.records r
      WHERE r.workspace_id = $1 AND ${notExpired('$3')}
      ${after ? 'AND (r.updated_at, r.id) < ($4::timestamptz, $5::uuid)' : ''}${f.sql}
      ORDER BY r.updated_at DESC, r.id DESC LIMIT $2`,
    [...base, ...position, ...f.params],
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
  metadata?: Record<string, Json>;
  embedding?: number[] | null;
  expiresAt?: Date | null;
}

export interface PutOptions {
  /** The server clock (expiry, job times). */
  now?: Date;
  /** How errors name the fields: `input` (prefix of the record's fields) and `id`; putMemories: input.records[i]. */
  fields?: { input: string; id: string };
  /** Workspaces read earlier in this transaction, by id (putMemories reads each once); filled as it reads. */
  workspaces?: Map<string, WorkspaceModel | null>;
  /** False: the caller sends the NOTIFY (putMemories, once for the batch). Default true. */
  notify?: boolean;
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
 * row lock (SELECT ... FOR NO KEY UPDATE, which lets the indexer's foreign-key checks through) and each sees the
 * version the previous one committed, so an expectedVersion check can never pass twice for one version: no lost
 * update. Two creators race on the primary key instead:
 * INSERT ... ON CONFLICT DO NOTHING waits for the other's commit, and the loser goes round again as an update.
 */
export async function putRecord(
  tx: Queryable,
  auth: AuthContext,
  put: PutRecord,
  opts: PutOptions = {},
): Promise<{ record: MemoryRecordModel; created: boolean }> {
  const now = opts.now ?? new Date();
  const f = opts.fields ?? { input: 'input', id: 'id' };
  const workspace = await writableWorkspace(tx, put.workspaceId, f.input, opts.workspaces);
  const clean = cleanRecord(put, workspace, now, f.input);
  const embedding = put.embedding ?? null;
  if (embedding) await fixDimension(tx, workspace, embedding.length, `${f.input}.embedding`);
  const values = [
    clean.kind,
    clean.content,
    clean.tags,
    auth.principalId,
    JSON.stringify(clean.metadata),
    embedding,
    put.expiresAt ? put.expiresAt.toISOString() : null,
    auth.deviceId ?? null,
  ];
  const NORM = `CASE WHEN $7::real[] IS NULL THEN NULL ELSE sqrt((SELECT sum(x::float8 * x::float8) FROM unnest($7::real[]) x)) END`;
  for (let attempt = 0; attempt < 2; attempt++) {
    const current = await tx.query<{
      workspace_id: string;
      version: number;
      expired: boolean;
      author_device: string | null;
    }>(
      `SELECT workspace_id, version, (expires_at IS NOT NULL AND expires_at <= $2::timestamptz) AS expired,
              author_device
         FROM memory.records WHERE id = $1 FOR NO KEY UPDATE`,
      [put.id, now.toISOString()],
    );
    let row = current.rows[0];
    if (row?.expired) {
      // Expired is gone: the sweeper has not purged it yet, so this write does (with its chunks and jobs).
      await tx.query('DELETE FROM memory.records WHERE id = $1', [put.id]);
      row = undefined;
    }
    if (row) {
      if (row.workspace_id !== workspace.id) {
        throw badInput(
          'A memory record with this id already exists in another workspace of your tenant. Record ids are unique per tenant: write it to its own workspace, or use a new id.',
          { field: f.id },
        );
      }
      if (auth.deviceId && row.author_device !== auth.deviceId) {
        // A device acts as itself, not as the member who enrolled it: it changes only what it wrote.
        throw new AppError(
          'FORBIDDEN',
          'A device may change only the memory records it wrote; this one was written by a person or another device. Write it under a new id.',
          { field: f.id },
        );
      }
      if (put.expectedVersion != null && put.expectedVersion !== row.version) {
        throw versionConflict(row.version);
      }
      const updated = await tx.query<RecordRow>(
        `UPDATE memory.records AS r
            SET kind = $2, content = $3, tags = $4, author = $5, version = r.version + 1, updated_at = now(),
                metadata = $6::jsonb, embedding = $7::real[], embedding_norm = ${NORM}, expires_at = $8,
                author_device = $9
          WHERE r.id = $1
          RETURNING ${RECORD}`,
        [put.id, ...values],
      );
      // The old search data goes now; the indexing job cuts the new content. After an indexer of this record has
      // finished (its lock), so its chunks are seen and deleted too.
      await lockIndexing(tx, auth.tenantId, put.id);
      await tx.query('DELETE FROM memory.chunks WHERE record_id = $1', [put.id]);
      await enqueueIndexing(tx, auth, put.id, workspace.id, now, opts.notify ?? true);
      return { record: toRecord(updated.rows[0]!, workspace), created: false };
    }
    if (put.expectedVersion != null && put.expectedVersion !== 0) throw versionConflict(0);
    const inserted = await tx.query<RecordRow>(
      `INSERT INTO memory.records AS r (tenant_id, id, workspace_id, version,
              kind, content, tags, author, metadata, embedding, embedding_norm, expires_at, author_device)
       VALUES ($10, $1, $11, 1, $2, $3, $4, $5, $6::jsonb, $7::real[], ${NORM}, $8, $9)
       ON CONFLICT (tenant_id, id) DO NOTHING
       RETURNING ${RECORD}`,
      [put.id, ...values, auth.tenantId, workspace.id],
    );
    if (inserted.rows[0]) {
      await enqueueIndexing(tx, auth, put.id, workspace.id, now, opts.notify ?? true);
      return { record: toRecord(inserted.rows[0], workspace), created: true };
    }
    // Another transaction created it after our look and has committed (ON CONFLICT waited for it): update it.
  }
  throw new Error('putRecord: the record neither exists nor could be inserted');
}

/** The workspace a record is written to (NOT_FOUND naming `<input>.workspaceId`), read once per `cache`. */
export async function writableWorkspace(
  tx: Queryable,
  id: string,
  input: string,
  cache?: Map<string, WorkspaceModel | null>,
): Promise<WorkspaceModel> {
  let workspace = cache?.get(id);
  if (workspace === undefined) {
    workspace = await findWorkspace(tx, id);
    cache?.set(id, workspace);
  }
  if (!workspace) {
    throw new AppError('NOT_FOUND', notFound(`The workspace (${input}.workspaceId)`).message, {
      field: `${input}.workspaceId`,
    });
  }
  return workspace;
}

/**
 * The checks of a write that need no database: expiry in the future, then the secret filter with the workspace's
 * policy (after this nothing secret is left to store). Returns what is stored.
 */
export function cleanRecord(put: PutRecord, workspace: WorkspaceModel, now: Date, input: string) {
  if (put.expiresAt && put.expiresAt.getTime() <= now.getTime()) {
    throw badInput(
      `${input}.expiresAt is not in the future. Send a later time, or null for a record that does not expire.`,
      { field: `${input}.expiresAt` },
    );
  }
  return filterWrite(
    { content: put.content, kind: put.kind, tags: put.tags, metadata: put.metadata ?? {} },
    workspace.secretPolicy,
    input,
  ).value;
}

export type CleanRecord = ReturnType<typeof cleanRecord>;

/** An embedding whose dimension is not the workspace's. */
export function dimensionMismatch(field: string, expected: number, got: number): AppError {
  return badInput(
    `${field} has ${got} dimensions, but this workspace's embeddings have ${expected}. Use the same embedding model for the whole workspace.`,
    { field, expected, got },
  );
}

/** A record that putRecords creates in one statement with others (it does not exist; checked and cleaned). */
export interface NewRecord {
  id: string;
  workspace: WorkspaceModel;
  clean: CleanRecord;
  embedding: number[] | null;
  expiresAt: Date | null;
}

/**
 * Creates records that did not exist when looked up, in one INSERT, with one job each in one more, as putRecord's
 * create path writes them (version 1, the caller as author and device, the embedding's norm). A record another
 * transaction created meanwhile is skipped (ON CONFLICT DO NOTHING, after waiting for it): it is missing from the
 * answer, and the caller writes it the one-by-one way. Sends no NOTIFY.
 */
export async function createRecords(
  tx: Queryable,
  auth: AuthContext,
  records: readonly NewRecord[],
  now: Date,
): Promise<Map<string, MemoryRecordModel>> {
  const created = new Map<string, MemoryRecordModel>();
  if (records.length === 0) return created;
  const rows = records.map((r) => ({
    id: r.id,
    workspace_id: r.workspace.id,
    kind: r.clean.kind,
    content: r.clean.content,
    tags: r.clean.tags,
    metadata: r.clean.metadata,
    embedding: r.embedding,
    expires_at: r.expiresAt ? r.expiresAt.toISOString() : null,
  }));
  const inserted = await tx.query<RecordRow>(
    `INSERT INTO memory.records AS r (tenant_id, id, workspace_id, version,
            kind, content, tags, author, metadata, embedding, embedding_norm, expires_at, author_device)
     SELECT $1, i.id, i.workspace_id, 1, i.kind, i.content, i.tags, $2, i.metadata, i.embedding,
            CASE WHEN i.embedding IS NULL THEN NULL
                 ELSE sqrt((SELECT sum(x::float8 * x::float8) FROM unnest(i.embedding) x)) END,
            i.expires_at, $3
       FROM jsonb_to_recordset($4::jsonb) AS i(id uuid, workspace_id uuid, kind text, content text, tags text[],
                                               metadata jsonb, embedding real[], expires_at timestamptz)
     ON CONFLICT (tenant_id, id) DO NOTHING
     RETURNING ${RECORD}`,
    [auth.tenantId, auth.principalId, auth.deviceId ?? null, JSON.stringify(rows)],
  );
  const byId = new Map(records.map((r) => [r.id, r.workspace]));
  for (const row of inserted.rows) created.set(row.id, toRecord(row, byId.get(row.id)!));
  if (created.size > 0) {
    await tx.query(
      `INSERT INTO memory.jobs (tenant_id, record_id, workspace_id, run_after, created_at, updated_at)
       SELECT $1, j.record_id, j.workspace_id, $4, $4, $4
         FROM unnest($2::uuid[], $3::uuid[]) AS j(record_id, workspace_id)
       ON CONFLICT (tenant_id, record_id) WHERE state = 'QUEUED' DO NOTHING`,
      [
        auth.tenantId,
        [...created.keys()],
        [...created.values()].map((r) => r.workspace.id),
        now.toISOString(),
      ],
    );
  }
  return created;
}

/**
 * The workspace's embedding dimension: fixed by the first embedding when not set at creation (a concurrent first
 * writer may win: the UPDATE re-checks `IS NULL` after waiting, then we read what was committed).
 */
export async function fixDimension(
  tx: Queryable,
  workspace: WorkspaceModel,
  dimension: number,
  field: string,
): Promise<number> {
  let dim = workspace.embeddingDimensions;
  if (dim == null) {
    await tx.query(
      'UPDATE memory.workspaces SET embedding_dim = $2 WHERE id = $1 AND embedding_dim IS NULL',
      [workspace.id, dimension],
    );
    const r = await tx.query<{ embedding_dim: number }>(
      'SELECT embedding_dim FROM memory.workspaces WHERE id = $1',
      [workspace.id],
    );
    dim = r.rows[0]!.embedding_dim;
    workspace.embeddingDimensions = dim;
  }
  if (dim !== dimension) throw dimensionMismatch(field, dim, dimension);
  return dim;
}

/**
 * The lock an indexer of a record holds while it rewrites the record's chunks. Lock order, so nothing deadlocks:
 * writers take the record row (FOR NO KEY UPDATE) and then this lock; the indexer takes this lock and then the row
 * FOR KEY SHARE (compatible with the writer's row lock, so it never waits for a writer that waits for it).
 */
export async function lockIndexing(tx: Queryable, tenantId: string, recordId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `memory.index:${tenantId}:${recordId}`,
  ]);
}

/** Queues the record's indexing (one waiting job per record) and wakes the worker on commit (unless `notify` is false). */
async function enqueueIndexing(
  tx: Queryable,
  auth: AuthContext,
  recordId: string,
  workspaceId: string,
  now: Date,
  notify: boolean,
): Promise<void> {
  await tx.query(
    `INSERT INTO memory.jobs (tenant_id, record_id, workspace_id, run_after, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $4, $4)
     ON CONFLICT (tenant_id, record_id) WHERE state = 'QUEUED' DO NOTHING`,
    [auth.tenantId, recordId, workspaceId, now.toISOString()],
  );
  if (notify) await notifyIndexing(tx);
}

/** Wakes the indexing worker when the transaction commits (PostgreSQL folds repeats within one transaction). */
export async function notifyIndexing(tx: Queryable): Promise<void> {
  await tx.query(`SELECT pg_notify('${JOBS_CHANNEL}', '')`);
}

/** Deletes a record; its chunks and jobs go with it (ON DELETE CASCADE, same statement). False: no such record. */
export async function deleteRecord(tx: Queryable, id: string, now: Date = new Date()): Promise<boolean> {
  const r = await tx.query(
    `DELETE FROM memory.records r WHERE r.id = $1 AND ${notExpired('$2')} RETURNING r.id`,
    [id, now.toISOString()],
  );
  // An expired one is gone already for the caller; purge it all the same.
  if (r.rowCount === 0) {
    await tx.query('DELETE FROM memory.records WHERE id = $1', [id]);
    return false;
  }
  return true;
}

/** Deletes a workspace with its records (and their chunks and jobs). Null: no such workspace. */
export async function deleteWorkspace(
  tx: Queryable,
  id: string,
  now: Date = new Date(),
): Promise<{ recordsDeleted: number } | null> {
  const counted = await tx.query<{ n: string | number }>(
    `SELECT count(*) AS n FROM memory.records r WHERE r.workspace_id = $1 AND ${notExpired('$2')}`,
    [id, now.toISOString()],
  );
  const r = await tx.query('DELETE FROM memory.workspaces WHERE id = $1', [id]);
  if (r.rowCount === 0) return null;
  return { recordsDeleted: Number(counted.rows[0]!.n) };
}

/**
 * Right to be forgotten: every workspace of the tenant (RLS: only the caller's) and so every record, chunk and job;
 * then the stored idempotent answers of `operations` (memory's other mutations) of every principal of the tenant,
 * which a replay would otherwise hand out again (a putMemory answer holds the record): they become tombstones, and
 * a replay of their keys is NOT_FOUND instead of a second write. Last an audit row saying who, when and how much
 * (never what). The erase's own answer is stored after this returns, so it stays replayable.
 */
export async function eraseTenantMemory(
  tx: Queryable,
  auth: AuthContext,
  now: Date,
  operations: readonly string[],
): Promise<{ workspacesDeleted: number; recordsDeleted: number; auditId: string; erasedAt: string }> {
  const records = await tx.query<{ n: string | number }>('SELECT count(*) AS n FROM memory.records');
  const workspaces = await tx.query('DELETE FROM memory.workspaces');
  const recordsDeleted = Number(records.rows[0]!.n);
  // After the delete: a write that committed while it waited for its row locks has its key row there by now.
  const idempotentResponsesErased = await eraseIdempotentResponses(tx, operations, now);
  const audit = await tx.query<{ id: string }>(
    `INSERT INTO memory.audit (tenant_id, at, actor, action, details)
     VALUES ($1, $2, $3, 'ERASE_TENANT_MEMORY', $4::jsonb) RETURNING id`,
    [
      auth.tenantId,
      now.toISOString(),
      auth.principalId,
      JSON.stringify({
        workspacesDeleted: workspaces.rowCount,
        recordsDeleted,
        idempotentResponsesErased,
        role: auth.role,
      }),
    ],
  );
  return {
    workspacesDeleted: workspaces.rowCount,
    recordsDeleted,
    auditId: audit.rows[0]!.id,
    erasedAt: now.toISOString(),
  };
}

const JOB =
  'j.id, j.record_id, j.workspace_id, j.state, j.attempts, j.last_error, j.run_after, j.created_at, j.updated_at';

/** Jobs by id (lowercase uuids), for entity references. */
export async function findJobs(tx: Queryable, ids: readonly string[]): Promise<Map<string, MemoryJobModel>> {
  const r = await tx.query<JobRow>(`SELECT ${JOB} FROM memory.jobs j WHERE j.id = ANY($1::uuid[])`, [ids]);
  return new Map(r.rows.map((row) => [row.id, toJob(row)]));
}

/** Query.memoryJobs: newest first by (created_at, id), optionally one state. */
export async function listJobs(
  tx: Queryable,
  state: MemoryJobState | null,
  limit: number,
  after: After | null,
): Promise<Keyed<MemoryJobModel>[]> {
  const params: unknown[] = [limit];
  let where = 'true';
  if (state) {
    params.push(state);
    where += ` AND j.state = $${params.length}`;
  }
  if (after) {
    params.push(after.value, after.id);
    where += ` AND (j.created_at, j.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`;
  }
  const r = await tx.query<JobRow & { sort_time: string }>(
    `SELECT ${JOB}, ${cursorTime('j.created_at')} AS sort_time
       FROM memory.jobs j WHERE ${where}
      ORDER BY j.created_at DESC, j.id DESC LIMIT $1`,
    params,
  );
  return r.rows.map((row) => ({ node: toJob(row), key: { value: row.sort_time, id: row.id } }));
}
