/**
 * putMemories: up to 100 records in one transaction, each written exactly as putMemory writes it (store.putRecord),
 * with per-item errors. Items are independent: each runs under its own savepoint, so a record putMemory would refuse
 * (VERSION_CONFLICT, FORBIDDEN, NOT_FOUND, BAD_USER_INPUT, PAYLOAD_TOO_LARGE) leaves nothing behind (not even the
 * purge of an expired row or a workspace dimension it fixed) and the others are written. An error that is not a
 * client's (a database failure) fails the whole call and nothing is written.
 *
 * Cost: the request, token check, idempotency key, transaction and NOTIFY are paid once per batch, each workspace is
 * read once. Records that do not exist yet (the bulk-load case) are created together in one INSERT and their jobs in
 * one more (store.createRecords), after the same checks putRecord makes; the rest (replacements, an id given twice,
 * an expectedVersion above 0, a workspace's first embedding, an id created meanwhile by someone else) go through
 * putRecord one at a time, each under its own savepoint.
 */
import { AppError, isClientCode, type AuthContext, type Queryable } from '@agentgraph/runtime';
import { contentTooLarge, parseBatchRecord, type PutMemoriesRecord } from './input.js';
import type { MemoryRecordModel, WorkspaceModel } from './models.js';
import {
  cleanRecord,
  createRecords,
  dimensionMismatch,
  notifyIndexing,
  putRecord,
  writableWorkspace,
  type NewRecord,
} from './store.js';

/** PutMemoriesError: a refused record's error, as putMemory would have sent it (its extensions as JSON text). */
export interface BatchItemError {
  code: string;
  message: string;
  field: string | null;
  currentVersion: number | null;
  extensions: string;
}

export interface BatchEdge {
  index: number;
  id: string;
  node: MemoryRecordModel | null;
  created: boolean | null;
  error: BatchItemError | null;
}

/** A record of the batch after validation: what to write, or the error it already has. */
export type BatchItem = { index: number; id: string } & (
  { record: PutMemoriesRecord; error?: undefined } | { record?: undefined; error: AppError }
);

/**
 * Validates each record on its own (the fields putMemory's arguments check, and content ≤ maxPayloadBytes), outside
 * the transaction. A refused record keeps the id it was sent with (the edge's id), or "" when it had none.
 */
export function prepareBatch(records: readonly unknown[], maxPayloadBytes: number): BatchItem[] {
  return records.map((value, index): BatchItem => {
    const sent = (value as { id?: unknown } | null)?.id;
    const id = typeof sent === 'string' ? sent : '';
    const parsed = parseBatchRecord(value, index);
    if (!parsed.ok) return { index, id, error: parsed.error };
    const { record } = parsed;
    const tooLarge = contentTooLarge(record.content, `input.records[${index}].content`, maxPayloadBytes);
    if (tooLarge) return { index, id, error: tooLarge };
    return { index, id: record.id, record };
  });
}

function itemError(err: AppError): BatchItemError {
  const { code: _code, ...rest } = err.extensions as Record<string, unknown>;
  return {
    code: err.code,
    message: err.message,
    field: typeof rest['field'] === 'string' ? rest['field'] : null,
    currentVersion: typeof rest['currentVersion'] === 'number' ? rest['currentVersion'] : null,
    extensions: JSON.stringify(rest),
  };
}

/** A client's error (goes into the item's edge); anything else fails the batch. */
function isItemError(err: unknown): err is AppError {
  return err instanceof AppError && isClientCode(err.code);
}

/**
 * Writes the batch as if in input order (an id given twice is written twice: the second sees the first). First it
 * takes a transaction lock per distinct id in sorted order, so two batches over the same ids queue instead of
 * deadlocking on rows they would otherwise lock in their own orders; a single putMemory holds one row only, so it
 * cannot close a cycle with a batch. Then the records that can be created together are (see the top), then the
 * others one by one in input order: none of them depends on a record created together (those ids occur once and
 * did not exist), nor on their workspace dimension (a workspace without one sends its embeddings one by one).
 */
export async function putRecords(
  tx: Queryable,
  auth: AuthContext,
  items: readonly BatchItem[],
  now: Date,
): Promise<{ edges: BatchEdge[]; written: number; failed: number }> {
  const valid = items.flatMap((i) => (i.record ? [{ ...i, record: i.record }] : []));
  const ids = [...new Set(valid.map((i) => i.record.id))].sort();
  const edges: BatchEdge[] = items.map(({ index, id, error }) => ({
    index,
    id,
    node: null,
    created: null,
    error: error ? itemError(error) : null,
  }));
  if (ids.length === 0) return { edges, written: 0, failed: items.length };
  await tx.query(
    `SELECT count(pg_advisory_xact_lock(hashtextextended($1 || k, 0)))
       FROM (SELECT k FROM unnest($2::text[]) AS k ORDER BY k) s`,
    [`memory.put:${auth.tenantId}:`, ids],
  );
  const existing = new Set(
    (
      await tx.query<{ id: string }>('SELECT id FROM memory.records WHERE id = ANY($1::uuid[])', [ids])
    ).rows.map((r) => r.id),
  );
  const occurrences = new Map<string, number>();
  for (const { record } of valid) occurrences.set(record.id, (occurrences.get(record.id) ?? 0) + 1);

  const workspaces = new Map<string, WorkspaceModel | null>();
  const together: (NewRecord & { index: number })[] = [];
  const oneByOne: typeof valid = [];
  for (const item of valid) {
    const { index, record } = item;
    const input = `input.records[${index}]`;
    if (
      existing.has(record.id) ||
      occurrences.get(record.id)! > 1 ||
      (record.expectedVersion != null && record.expectedVersion !== 0)
    ) {
      oneByOne.push(item);
      continue;
    }
    try {
      // putRecord's checks before it touches the record (none of them writes).
      const workspace = await writableWorkspace(tx, record.workspaceId, input, workspaces);
      const clean = cleanRecord({ ...record, expectedVersion: null }, workspace, now, input);
      const embedding = record.embedding;
      if (embedding && workspace.embeddingDimensions == null) {
        oneByOne.push(item); // it fixes the dimension: in order, under its savepoint
        continue;
      }
      if (embedding && embedding.length !== workspace.embeddingDimensions) {
        throw dimensionMismatch(`${input}.embedding`, workspace.embeddingDimensions!, embedding.length);
      }
      together.push({ index, id: record.id, workspace, clean, embedding, expiresAt: record.expiresAt });
    } catch (err) {
      if (!isItemError(err)) throw err;
      edges[index]!.error = itemError(err);
    }
  }

  const created = await createRecords(tx, auth, together, now);
  for (const r of together) {
    const node = created.get(r.id);
    if (node) edges[r.index] = { ...edges[r.index]!, node, created: true };
    else oneByOne.push(valid.find((v) => v.index === r.index)!); // created meanwhile: now a replacement
  }
  oneByOne.sort((a, b) => a.index - b.index);

  for (const { index, record } of oneByOne) {
    const { id: _id, expectedVersion, ...fields } = record;
    await tx.query('SAVEPOINT put_memories_item');
    try {
      const { record: node, created: isNew } = await putRecord(
        tx,
        auth,
        { id: record.id, ...fields, expectedVersion: expectedVersion ?? null },
        {
          now,
          fields: { input: `input.records[${index}]`, id: `input.records[${index}].id` },
          workspaces,
          notify: false,
        },
      );
      await tx.query('RELEASE SAVEPOINT put_memories_item');
      edges[index] = { ...edges[index]!, node, created: isNew };
    } catch (err) {
      if (!isItemError(err)) throw err;
      await tx.query('ROLLBACK TO SAVEPOINT put_memories_item');
      // What this item did to its workspace (a dimension fixed) is rolled back: read the workspace again.
      workspaces.delete(fields.workspaceId);
      edges[index]!.error = itemError(err);
    }
  }
  const written = edges.filter((e) => e.node).length;
  if (written > 0) await notifyIndexing(tx);
  return { edges, written, failed: items.length - written };
}
