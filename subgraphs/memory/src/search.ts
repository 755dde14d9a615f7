/**
 * Query.searchMemory's SQL: full-text rank over the records' chunks and cosine similarity over their embeddings,
 * one exact scan of the workspace's (filtered, unexpired) records, keyset-paged on (score DESC, id ASC).
 *
 * Formula (also in the schema): textScore = max over the record's chunks of ts_rank_cd(tsv, q, 32), which is
 * rank / (rank + 1) in [0, 1); vectorScore = (1 + cosine(record, query)) / 2 in [0, 1]; score = textScore,
 * vectorScore, or textWeight * textScore + (1 - textWeight) * vectorScore when both are asked for. With text,
 * only records whose chunks match it are candidates; with an embedding alone, every record that has one.
 * Everything is float8 arithmetic in SQL, so the same data gives the same scores and the same order every time.
 *
 * pgvector: not used. This machine has no `vector` extension for either driver, so similarity is the exact scan
 * below on `real[]`; `hasPgvector` is the seam where an index-backed path would plug in (see README).
 */
import type { KeysetAfter, Keyed, Queryable } from '@agentgraph/runtime';
import { toRecord, type RecordRow, type SearchHit, type WorkspaceModel } from './models.js';
import { filterSql, notExpired, RECORD, type RecordFilterValues } from './store.js';

export interface SearchParams {
  text: string | null;
  embedding: number[] | null;
  textWeight: number;
  filter: RecordFilterValues;
}

/** Score values in cursors: the float8 as JavaScript prints it (round-trips exactly through PostgreSQL). */
export const scoreKey = (value: string): boolean =>
  value.length <= 32 && value.trim() !== '' && Number.isFinite(Number(value));

export async function searchRecords(
  tx: Queryable,
  workspace: WorkspaceModel,
  q: SearchParams,
  limit: number,
  after: KeysetAfter | null,
  now: Date,
): Promise<Keyed<SearchHit>[]> {
  const params: unknown[] = [workspace.id, now.toISOString(), limit];
  const p = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const text = q.text !== null ? `websearch_to_tsquery('english'::regconfig, ${p(q.text)})` : null;
  const qvec = q.embedding !== null ? `${p(q.embedding)}::real[]` : null;
  const textScore = text
    ? `(SELECT max(ts_rank_cd(c.tsv, ${text}, 32))::float8 FROM memory.chunks c
         WHERE c.tenant_id = r.tenant_id AND c.record_id = r.id AND c.tsv @@ ${text})`
    : 'NULL::float8';
  const vectorScore = qvec
    ? `(1 + (SELECT sum(a::float8 * b::float8) FROM unnest(r.embedding, ${qvec}) AS t(a, b))
            / (r.embedding_norm * (SELECT sqrt(sum(x::float8 * x::float8)) FROM unnest(${qvec}) x))) / 2`
    : 'NULL::float8';
  const weight = text && qvec ? p(q.textWeight) : null;
  const score =
    text && qvec
      ? `(${weight}::float8 * s.text_score + (1 - ${weight}::float8) * s.vector_score)`
      : text
        ? 's.text_score'
        : 's.vector_score';
  const candidates = [
    text
      ? `EXISTS (SELECT 1 FROM memory.chunks c WHERE c.tenant_id = r.tenant_id AND c.record_id = r.id AND c.tsv @@ ${text})`
      : null,
    qvec ? 'r.embedding IS NOT NULL' : null,
  ]
    .filter(Boolean)
    .map((c) => ` AND ${c}`)
    .join('');
  const f = filterSql(q.filter, params.length + 1);
  params.push(...f.params);
  const position = after
    ? `WHERE (x.score < ${p(after.value)}::float8 OR (x.score = $${params.length}::float8 AND x.id > ${p(after.id)}::uuid))`
    : '';
  const sql = `
    WITH s AS (
      SELECT ${RECORD}, ${textScore} AS text_score, ${vectorScore} AS vector_score
        FROM memory.records r
       WHERE r.workspace_id = $1 AND ${notExpired('$2')}${candidates}${f.sql}
    ), x AS (
      SELECT s.*, ${score} AS score FROM s
    )
    SELECT x.* FROM x ${position}
     ORDER BY x.score DESC, x.id ASC
     LIMIT $3`;
  const r = await tx.query<
    RecordRow & { text_score: number | null; vector_score: number | null; score: number }
  >(sql, params);
  return r.rows.map((row) => {
    const score = Number(row.score);
    return {
      node: {
        record: toRecord(row, workspace),
        score,
        textScore: row.text_score == null ? null : Number(row.text_score),
        vectorScore: row.vector_score == null ? null : Number(row.vector_score),
      },
      key: { value: String(score), id: row.id },
    };
  });
}

/**
 * Whether the pgvector extension could be used here (the seam for an index-backed similarity path; unused, kept as the
 * README says).
 * @public
 */
export async function hasPgvector(db: Queryable): Promise<boolean> {
  const r = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'",
  );
  return (r.rows[0]?.n ?? 0) > 0;
}
