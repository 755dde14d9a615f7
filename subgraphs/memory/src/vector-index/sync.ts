/**
 * Brings a FlatIndex up to date with the database by following migration 007's change feed, in the caller's
 * transaction (RLS applies: only the caller's tenant is read). Lock-free, as outbox pollers do:
 *
 * 1. One statement reads `pg_snapshot_xmin(pg_current_snapshot())` (every transaction below it has ended) with the
 *    first page of tombstones, of records stamped at or above the watermark `since` (the previous round's xmin),
 *    each with its chunks' tsvectors, and of records whose chunks alone were stamped so (migration 011: the
 *    indexing job writes them in a transaction of its own);
 * 2. further pages, each its own statement, follow by keyset (stamp, id) when a page was full;
 * 3. the new watermark is the xmin of step 1.
 *
 * A row read is the record's state in its statement's snapshot; a tombstone is applied only when the record does
 * not exist in its statement's snapshot (an id may be deleted and written again). Results are applied in statement
 * order, so the copy always moves forward in time. A transaction running during a round has an id at or above the
 * round's xmin, so the next round reads what it committed: nothing is missed, and what is read twice is harmless.
 * The first load is the same loop from watermark 0 (records without an embedding skipped).
 */
import type { Queryable } from '@agentgraph/runtime';
import type { FlatIndex } from './flat-index.js';

/** Rows per statement: bounds what one statement brings into memory (a page of 64-dim rows is about 10 MB). */
export const SYNC_PAGE = 10_000;

/** Thrown when the copy would outgrow what the caller allows; the workspace is then searched in SQL. */
export class IndexTooLarge extends Error {
  constructor(readonly bytes: number) {
    super(`the workspace's embeddings need ${bytes} bytes in memory, more than the budget leaves`);
  }
}

export interface SyncOptions {
  /** Whether the copy may hold this many bytes (after each page); false ends the round with IndexTooLarge. */
  fits: (bytes: number) => boolean;
  pageSize?: number;
}

export interface SyncResult {
  /** The new watermark (an xid8 as text), for the next round. */
  watermark: string;
  tombstones: number;
  records: number;
  /** Records whose chunks were read again (re-indexed) without the record itself changing. */
  texts: number;
  statements: number;
}

interface FeedRow {
  op: number;
  stamp: string;
  id: string | null;
  v: Uint8Array | null;
  norm: number | string | null;
  kind: string | null;
  author: string | null;
  tags: string[] | null;
  updated_us: string | null;
  expires_us: string | null;
  /** The record's chunks: each one's tsvectorsend after its length (int4send), in chunk order; null for none. */
  t: Uint8Array | null;
}

// Column names come from a UNION's first branch, so the record columns are named here too.
const NO_COLUMNS = `NULL::bytea AS v, NULL::float8 AS norm, NULL::text AS kind, NULL::text AS author,
         NULL::text[] AS tags, NULL::text AS updated_us, NULL::text AS expires_us`;
const NO_RECORD = `${NO_COLUMNS}, NULL::bytea AS t`;
/** A record's chunks for the copy's postings (text-postings.ts): binary tsvectors, length-prefixed, in order. */
const TEXT = (
  record: string,
) => `(SELECT string_agg(int4send(octet_length(x.b)) || x.b, ''::bytea ORDER BY x.n)
           FROM (SELECT c.n, tsvectorsend(c.tsv) AS b FROM memory.chunks c WHERE c.record_id = ${record}) x)`;
const TOMBSTONES = (
  where: string,
) => `SELECT 1 AS op, t.deleted_xid::text AS stamp, t.record_id AS id, ${NO_RECORD}
    FROM memory.search_tombstones t
   WHERE t.workspace_id = $1 AND t.deleted_xid >= $2::xid8${where}
     AND NOT EXISTS (SELECT 1 FROM memory.records x WHERE x.id = t.record_id)
   ORDER BY t.deleted_xid, t.record_id LIMIT $3`;
const RECORDS = (where: string) => `SELECT 2 AS op, r.search_xid::text AS stamp, r.id,
         CASE WHEN cardinality(r.embedding) = $4 THEN array_send(r.embedding) END AS v, r.embedding_norm AS norm,
         r.kind, r.author, r.tags, (extract(epoch FROM r.updated_at) * 1000000)::int8::text AS updated_us,
         (extract(epoch FROM r.expires_at) * 1000000)::int8::text AS expires_us,
         CASE WHEN cardinality(r.embedding) = $4 THEN ${TEXT('r.id')} END AS t
    FROM memory.records r
   WHERE r.workspace_id = $1 AND r.search_xid >= $2::xid8${where}
   ORDER BY r.search_xid, r.id LIMIT $3`;
/**
 * Records of the workspace whose chunks were written at or after the watermark (the indexing job cuts them after
 * the record's own write, in a transaction of its own; migration 011 stamps each chunk). A record re-indexed comes
 * with all its chunks as they are now, which replaces what the copy held (chunks are only inserted, and deleted
 * with the record, by a write to it, or by the job that inserts the new ones in the same transaction).
 */
const CHUNKS = (where: string) => `SELECT 3 AS op, x.stamp::text AS stamp, x.record_id AS id,
         ${NO_COLUMNS}, ${TEXT('x.record_id')} AS t
    FROM (SELECT DISTINCT c.search_xid AS stamp, c.record_id FROM memory.chunks c
           WHERE c.search_xid >= $2::xid8) x
   WHERE EXISTS (SELECT 1 FROM memory.records r WHERE r.id = x.record_id AND r.workspace_id = $1
                    AND cardinality(r.embedding) = $4)${where}
   ORDER BY x.stamp, x.record_id LIMIT $3`;

/** Decodes array_send(real[]) of a one-dimensional array without NULLs into `into`; false if it is not one. */
function decodeReals(bytes: Uint8Array, into: Float32Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // ndim, has-nulls flag, element type, then (length, lower bound) per dimension; then (length, value) per element.
  if (
    bytes.byteLength !== 20 + 8 * into.length ||
    view.getInt32(0) !== 1 ||
    view.getInt32(12) !== into.length
  ) {
    return false;
  }
  for (let i = 0, o = 20; i < into.length; i++, o += 8) {
    if (view.getInt32(o) !== 4) return false;
    into[i] = view.getFloat32(o + 4);
  }
  return true;
}

function apply(index: FlatIndex, rows: FeedRow[]): { tombstones: number; records: number; texts: number } {
  let tombstones = 0;
  let records = 0;
  let texts = 0;
  // Decoded into one scratch array: upsert copies it into the index's own storage.
  const embedding = new Float32Array(index.dim);
  for (const row of rows) {
    if (row.op === 1) {
      index.remove(row.id!);
      tombstones++;
    } else if (row.op === 2) {
      records++;
      const norm = row.norm == null ? NaN : Number(row.norm);
      if (row.v == null || !(norm > 0) || !decodeReals(row.v, embedding)) {
        // No embedding (any more), or not one this index can hold: the record is not a vector candidate.
        index.remove(row.id!);
        continue;
      }
      index.upsert({
        id: row.id!,
        embedding,
        norm,
        kind: row.kind!,
        author: row.author!,
        tags: row.tags ?? [],
        updatedUs: Number(row.updated_us),
        expiresUs: row.expires_us == null ? Infinity : Number(row.expires_us),
      });
      index.setText(row.id!, row.t);
    } else if (row.op === 3) {
      // Chunks of a record the copy holds (else it has no embedding of this dimension: not a candidate).
      if (index.setText(row.id!, row.t)) texts++;
    }
  }
  return { tombstones, records, texts };
}

/** One round: from watermark `since` ('0' for a first load) to the returned one. */
export async function syncIndex(
  tx: Queryable,
  index: FlatIndex,
  workspaceId: string,
  since: string,
  opts: SyncOptions,
): Promise<SyncResult> {
  const page = opts.pageSize ?? SYNC_PAGE;
  const first = since === '0';
  // A first load skips records without an embedding; later rounds must see them (an embedding removed).
  const embedded = first ? ' AND r.embedding IS NOT NULL' : '';
  const params = [workspaceId, since, page, index.dim];
  const check = () => {
    if (!opts.fits(index.bytes)) throw new IndexTooLarge(index.bytes);
  };
  const head = await tx.query<FeedRow>(
    `SELECT 0 AS op, pg_snapshot_xmin(pg_current_snapshot())::text AS stamp, NULL::uuid AS id, ${NO_RECORD}
     UNION ALL (${TOMBSTONES('')})
     UNION ALL (${RECORDS(embedded)})${
       first
         ? ''
         : `
     UNION ALL (${CHUNKS('')})`
     }`,
    params,
  );
  const watermark = head.rows.find((r) => r.op === 0)!.stamp;
  const total = apply(index, head.rows);
  check();
  let statements = 1;
  // Further pages of each kind, each applied as it arrives (statement order = time order).
  // Tombstone pages take $1–$3 (no dimension), record and chunk pages $1–$4; the keyset follows.
  const nextPage = (op: number, key: FeedRow) =>
    op === 1
      ? tx.query<FeedRow>(TOMBSTONES(` AND (t.deleted_xid, t.record_id) > ($4::xid8, $5::uuid)`), [
          ...params.slice(0, 3),
          key.stamp,
          key.id,
        ])
      : op === 2
        ? tx.query<FeedRow>(RECORDS(` AND (r.search_xid, r.id) > ($5::xid8, $6::uuid)${embedded}`), [
            ...params,
            key.stamp,
            key.id,
          ])
        : tx.query<FeedRow>(CHUNKS(` AND (x.stamp, x.record_id) > ($5::xid8, $6::uuid)`), [
            ...params,
            key.stamp,
            key.id,
          ]);
  for (const op of first ? [1, 2] : [1, 2, 3]) {
    let rows = head.rows.filter((r) => r.op === op);
    while (rows.length === page) {
      rows = (await nextPage(op, rows.at(-1)!)).rows;
      statements++;
      const n = apply(index, rows);
      total.tombstones += n.tombstones;
      total.records += n.records;
      total.texts += n.texts;
      check();
    }
  }
  // The postings' lists grew ahead of need; a first load gives the slack back (later rounds add little).
  if (first) index.trimText();
  return { watermark, ...total, statements };
}
