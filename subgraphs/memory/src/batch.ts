/**
 * putMemories: up to 100 records in one transaction, each written exactly as putMemory writes it (store.putRecord),
 * with per-item errors. Items are independent: each runs under its own savepoint, so a record putMemory would refuse
 * (VERSION_CONFLICT, FORBIDDEN, NOT_FOUND, BAD_USER_INPUT, PAYLOAD_TOO_LARGE) leaves nothing behind (not even the
 * purge of an expired row or a workspace dimension it fixed) and the others are written. An error that is not a
 * client's (a database failure) fails the whole call and nothing is written.
 *
 * Cost: the request, token check, idempotency key, transaction and NOTIFY are paid once per batch, each workspace is
 * read once; per record stay putRecord's statements plus SAVEPOINT/RELEASE.
 */
import { AppError, isClientCode, type AuthContext, type Queryable } from '@agentgraph/runtime';
import { parseBatchRecord, type PutMemoriesRecord } from './input.js';
import type { MemoryRecordModel, WorkspaceModel } from './models.js';
import { notifyIndexing, putRecord } from './store.js';

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
    if (Buffer.byteLength(record.content, 'utf8') > maxPayloadBytes) {
      const field = `input.records[${index}].content`;
      return {
        index,
        id,
        error: new AppError(
          'PAYLOAD_TOO_LARGE',
          `${field} is over the limit of ${maxPayloadBytes} bytes (UTF-8). Store less per record, or split it into several records.`,
          { field, maxBytes: maxPayloadBytes },
        ),
      };
    }
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
 * Writes the batch in input order (an id given twice is written twice: the second sees the first's version).
 * First it takes a transaction lock per distinct id in sorted order, so two batches over the same ids queue instead
 * of deadlocking on rows they would otherwise lock in their own orders; a single putMemory holds one row only, so
 * it cannot close a cycle with a batch.
 */
export async function putRecords(
  tx: Queryable,
  auth: AuthContext,
  items: readonly BatchItem[],
  now: Date,
): Promise<{ edges: BatchEdge[]; written: number; failed: number }> {
  const ids = [...new Set(items.flatMap((i) => (i.record ? [i.record.id] : [])))].sort();
  if (ids.length > 0) {
    await tx.query(
      `SELECT count(pg_advisory_xact_lock(hashtextextended($1 || k, 0)))
         FROM (SELECT k FROM unnest($2::text[]) AS k ORDER BY k) s`,
      [`memory.put:${auth.tenantId}:`, ids],
    );
  }
  const workspaces = new Map<string, WorkspaceModel | null>();
  const edges: BatchEdge[] = [];
  let written = 0;
  for (const item of items) {
    const { index, id } = item;
    if (!item.record) {
      edges.push({ index, id, node: null, created: null, error: itemError(item.error) });
      continue;
    }
    const { id: _id, expectedVersion, ...fields } = item.record;
    await tx.query('SAVEPOINT put_memories_item');
    try {
      const { record, created } = await putRecord(
        tx,
        auth,
        { id: item.record.id, ...fields, expectedVersion: expectedVersion ?? null },
        {
          now,
          fields: { input: `input.records[${index}]`, id: `input.records[${index}].id` },
          workspaces,
          notify: false,
        },
      );
      await tx.query('RELEASE SAVEPOINT put_memories_item');
      edges.push({ index, id, node: record, created, error: null });
      written++;
    } catch (err) {
      if (!isItemError(err)) throw err;
      await tx.query('ROLLBACK TO SAVEPOINT put_memories_item');
      // What this item did to its workspace (a dimension fixed) is rolled back: read the workspace again.
      workspaces.delete(fields.workspaceId);
      edges.push({ index, id, node: null, created: null, error: itemError(err) });
    }
  }
  if (written > 0) await notifyIndexing(tx);
  return { edges, written, failed: items.length - written };
}
