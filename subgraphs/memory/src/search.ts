/**
 * Query.searchMemory's SQL: full-text rank over the records' chunks and cosine similarity over their embeddings,
 * keyset-paged on (score DESC, id ASC).
 *
 * Formula (also in the schema): textScore = max over the record's chunks of ts_rank_cd(tsv, q, 32), which is
 * rank / (rank + 1) in [0, 1); vectorScore = (1 + cosine(record, query)) / 2 in [0, 1]; score = textScore,
 * vectorScore, or textWeight * textScore + (1 - textWeight) * vectorScore when both are asked for. With text,
 * only records whose chunks match it are candidates; with an embedding alone, every record that has one.
 *
 * Paths (migration 005; `searchCapabilities` tells which one a workspace gets, Workspace.searchCapabilities in the
 * API):
 * - Full-text always goes through `memory.text_matches`, a definer function that applies the tenant (from the
 *   transaction's own setting) and the workspace itself, so `@@` can use the GIN index `chunks_tsv` even though RLS
 *   is forced (under RLS the non-leakproof `@@` runs after the tenant filter: a scan of every tenant row).
 * - Vector, `HNSW_INDEX`: where pgvector exists (always on PGlite) and the workspace's dimension has its partial
 *   HNSW index (`records_hnsw_<dim>`, ≤ 2000 dims): `ORDER BY embedding_v::vector(N) <=> query`, approximate
 *   (hnsw.ef_search, iterative scan in strict order so filters never starve a page); vectorScore = 1 - distance/2
 *   computed by pgvector in 32-bit floats.
 * - Vector, `EXACT_IN_MEMORY`: elsewhere (PostgreSQL without pgvector, e.g. Debian's 15), when the memory
 *   subgraph keeps in-process copies of workspaces' embeddings (src/vector-index/, a byte budget): the copy is
 *   brought up to date in the search's transaction (migration 007's change feed; usually one statement that reads
 *   nothing), scanned in process (exact, the same float8 arithmetic as the SQL dot product below, so the scores are
 *   equal to the bit), and the best hits are read back from memory.records with the expiry and filters applied again
 *   (a record deleted since is dropped, and the next candidates read). Hybrid matches and ranks the text in the
 *   copy itself when PostgreSQL's parse of it (websearch_to_tsquery, sent as tsquerysend) is words, OR and NOT:
 *   the copy keeps its records' chunks as postings (text-postings.ts; ranks equal to ts_rank_cd's to the bit), so
 *   no chunk is read from the table. Other queries (phrases, hyphenated words, a lone exclusion) take the tenant's
 *   matching chunks from `memory.tenant_chunk_matches` (a row per chunk; the copy keeps each record's best).
 *   Either way only the records the copy holds are scored. A workspace too large for the budget, or a server with
 *   the cache off, takes `EXACT_SCAN`.
 * - Vector, `EXACT_SCAN`: elsewhere: every record of the workspace
 *   compared with the query; exact, and linear in the workspace's records. Where migration 006 could install the
 *   `cube` extension (PostgreSQL contrib) and the dimension is ≤ 100, the distance is cube_distance (C) on the
 *   generated `embedding_c`, and cos = (|a|² + |b|² − d²) / (2|a||b|); else the float8 dot product over unnest()
 *   (about seven times slower).
 * Hybrid scores only the text matches, with the path's vector score.
 */
import type { KeysetAfter, Keyed, Queryable } from '@agentgraph/runtime';
import { toRecord, type RecordRow, type SearchHit, type WorkspaceModel } from './models.js';
import { filterSql, notExpired, RECORD, type RecordFilterValues } from './store.js';
import type { VectorCache } from './vector-index/cache.js';
import { norm32, type FlatIndex, type QueryText, type TextMatches } from './vector-index/flat-index.js';
import { parseTsquery } from './vector-index/text-postings.js';

export interface SearchParams {
  text: string | null;
  embedding: number[] | null;
  textWeight: number;
  filter: RecordFilterValues;
}

/** How similarity to an embedding is computed in a workspace (the API's MemoryVectorSearchPath). */
export type VectorSearchPath = 'HNSW_INDEX' | 'EXACT_IN_MEMORY' | 'EXACT_SCAN';

export interface SearchCapabilities {
  vectorSearch: VectorSearchPath;
  /** Whether vector results are exact (EXACT_IN_MEMORY, EXACT_SCAN) rather than from an approximate index. */
  vectorExact: boolean;
  /** Full-text candidates come from the chunks' GIN index (memory.text_matches). */
  fullText: 'INDEXED';
}

export interface SearchOptions {
  /** Force a vector path (tests compare both on the same data); default: the workspace's best. */
  vectorPath?: VectorSearchPath;
  /** hnsw.ef_search for this search (1–1000); default max(100, 4 × limit). */
  efSearch?: number;
  /** On the exact path, false forces the SQL dot product where cube_distance would serve (tests compare both). */
  exactCube?: boolean;
  /** EXACT_IN_MEMORY hybrid: text matches per bytea part read (default 1,024; tests split small sets too). */
  matchesPerPart?: number;
  /**
   * EXACT_IN_MEMORY hybrid: false asks PostgreSQL for the text matches even when the copy's postings could match
   * the query (tests compare both).
   */
  textInProcess?: boolean;
  /** The in-process copies (EXACT_IN_MEMORY) and the caller's tenant, whose copy is used. */
  vectors?: { cache: VectorCache; tenantId: string };
}

/** The largest dimension the cube extension holds (its CUBE_MAX_DIM). */
const CUBE_MAX_DIM = 100;

/** Double-quoted SQL identifier. */
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Score values in cursors: the float8 as JavaScript prints it (round-trips exactly through PostgreSQL). */
export const scoreKey = (value: string): boolean =>
  value.length <= 32 && value.trim() !== '' && Number.isFinite(Number(value));

/** SQL: whether the HNSW index of dimension `dim` (an int expression) exists (migration 005 names it). */
const hnswIndexExists = (dim: string) => `to_regclass('memory.records_hnsw_' || ${dim}) IS NOT NULL`;

/** Which of these dimensions have their HNSW index (created by migration 005's trigger where pgvector exists). */
export async function hnswDimensions(tx: Queryable, dims: readonly number[]): Promise<Map<number, boolean>> {
  const r = await tx.query<{ d: number; ok: boolean }>(
    `SELECT d, ${hnswIndexExists('d')} AS ok FROM unnest($1::int[]) AS d`,
    [dims],
  );
  return new Map(r.rows.map((row) => [Number(row.d), row.ok === true]));
}

/**
 * Which search paths serve a workspace whose dimension has (or lacks) its HNSW index, on a server whose in-process
 * copies are on (`inMemory`) or off.
 */
export function searchCapabilities(hnsw: boolean, inMemory = false): SearchCapabilities {
  return {
    vectorSearch: hnsw ? 'HNSW_INDEX' : inMemory ? 'EXACT_IN_MEMORY' : 'EXACT_SCAN',
    vectorExact: !hnsw,
    fullText: 'INDEXED',
  };
}

export async function searchRecords(
  tx: Queryable,
  workspace: WorkspaceModel,
  q: SearchParams,
  limit: number,
  after: KeysetAfter | null,
  now: Date,
  options: SearchOptions = {},
): Promise<Keyed<SearchHit>[]> {
  const dims = q.embedding?.length ?? 0;
  let path: VectorSearchPath = 'EXACT_SCAN';
  /** The schema of the cube extension when the exact path may use cube_distance on embedding_c (migration 006). */
  let cube: string | null = null;
  if (q.embedding !== null) {
    // One catalog read: the dimension's HNSW index, and the cube column with its extension's schema.
    const probe = await tx.query<{ hnsw: boolean; cube: string | null }>(
      `SELECT ${hnswIndexExists('$1::int')} AS hnsw,
              (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                WHERE e.extname = 'cube'
                  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = 'memory.records'::regclass
                                 AND a.attname = 'embedding_c' AND NOT a.attisdropped)) AS cube`,
      [dims],
    );
    path = options.vectorPath ?? (probe.rows[0]?.hnsw === true ? 'HNSW_INDEX' : 'EXACT_IN_MEMORY');
    if (path === 'EXACT_IN_MEMORY') {
      const hits = options.vectors
        ? await searchInMemory(tx, options, options.vectors, workspace, q, q.embedding, limit, after, now)
        : null;
      if (hits) return hits;
      // The cache is off, or this workspace does not fit in it.
      path = 'EXACT_SCAN';
    }
    if (path === 'EXACT_SCAN' && dims <= CUBE_MAX_DIM && options.exactCube !== false)
      cube = probe.rows[0]?.cube ?? null;
  }
  const hnsw = path === 'HNSW_INDEX';
  if (hnsw) {
    const ef = options.efSearch ?? Math.min(1000, Math.max(100, 4 * limit));
    // Transaction-local (the search runs in its own read transaction).
    await tx.query(
      `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'strict_order', true)`,
      [String(ef)],
    );
  }

  const params: unknown[] = [workspace.id, now.toISOString(), limit];
  const p = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const text = q.text !== null ? `websearch_to_tsquery('english'::regconfig, ${p(q.text)})` : null;
  let vectorScore = 'NULL::float8';
  let distance: string | null = null;
  if (q.embedding !== null) {
    if (hnsw) {
      // dims is the validated length of the query (1–4096), so it is safe to inline as the type modifier.
      const qv = `${p(`[${q.embedding.join(',')}]`)}::vector(${dims})`;
      // The index's expression, for ORDER BY; the score guards the cast (a row of another dimension, which only
      // another workspace can hold, must never reach it whatever order the planner checks the conditions in).
      distance = `(r.embedding_v::vector(${dims}) <=> ${qv})`;
      vectorScore = `(1 - (CASE WHEN cardinality(r.embedding) = ${dims} THEN r.embedding_v END::vector(${dims}) <=> ${qv}) / 2)`;
    } else if (cube) {
      // cube_distance in C; the query's cube made once (a scalar subquery is an InitPlan), from the same 32-bit
      // values as the stored embeddings, so |a|² + |b|² − d² is the float8 dot product up to rounding.
      const s = ident(cube);
      const qn = p(norm32(q.embedding));
      const d = `${s}.cube_distance(r.embedding_c, (SELECT ${s}.cube(${p(q.embedding)}::real[]::float8[])))`;
      vectorScore = `((1 + (r.embedding_norm * r.embedding_norm + ${qn}::float8 * ${qn}::float8 - power(${d}, 2))
            / (2 * r.embedding_norm * ${qn}::float8)) / 2)`;
    } else {
      const qvec = `${p(q.embedding)}::real[]`;
      vectorScore = `((1 + (SELECT sum(a::float8 * b::float8) FROM unnest(r.embedding, ${qvec}) AS t(a, b))
            / (r.embedding_norm * ${p(norm32(q.embedding))}::float8)) / 2)`;
    }
  }
  const weight = text && q.embedding ? p(q.textWeight) : null;
  const textScore = text ? 'm.text_score' : 'NULL::float8';
  const score =
    text && q.embedding
      ? `(${weight}::float8 * ${textScore} + (1 - ${weight}::float8) * ${vectorScore})`
      : text
        ? textScore
        : vectorScore;
  const from = text
    ? `memory.text_matches($1::uuid, ${text}) m JOIN memory.records r ON r.id = m.record_id`
    : 'memory.records r';
  const candidates = q.embedding
    ? hnsw
      ? ` AND cardinality(r.embedding) = ${dims}`
      : ' AND r.embedding IS NOT NULL'
    : '';
  const f = filterSql(q.filter, params.length + 1);
  params.push(...f.params);
  const position = after
    ? ` AND (${score} < ${p(after.value)}::float8 OR (${score} = $${params.length}::float8 AND r.id > ${p(after.id)}::uuid))`
    : '';
  const where = `r.workspace_id = $1 AND ${notExpired('$2')}${candidates}${f.sql}${position}`;
  const select = `${RECORD}, ${textScore} AS text_score, ${vectorScore} AS vector_score, ${score} AS score`;
  // The HNSW path lets the index order the candidates (nearest first, LIMIT), then sorts that page by the keyset
  // order; every other path sorts its candidates (text matches, or the workspace's records) by score.
  const sql =
    hnsw && !text
      ? `SELECT x.* FROM (
           SELECT ${select} FROM ${from} WHERE ${where} ORDER BY ${distance} LIMIT $3
         ) x ORDER BY x.score DESC, x.id ASC`
      : `SELECT ${select} FROM ${from} WHERE ${where} ORDER BY score DESC, r.id ASC LIMIT $3`;
  const r = await tx.query<
    RecordRow & { text_score: number | null; vector_score: number | null; score: number }
  >(sql, params);
  return r.rows.map((row) =>
    searchHit(
      row,
      workspace,
      Number(row.score),
      row.text_score == null ? null : Number(row.text_score),
      row.vector_score == null ? null : Number(row.vector_score),
    ),
  );
}

/** A page entry: the record, its scores, and its keyset key (score, id). */
function searchHit(
  row: RecordRow,
  workspace: WorkspaceModel,
  score: number,
  textScore: number | null,
  vectorScore: number | null,
): Keyed<SearchHit> {
  return {
    node: { record: toRecord(row, workspace), score, textScore, vectorScore },
    key: { value: String(score), id: row.id },
  };
}

/** Text matches per bytea part read by EXACT_IN_MEMORY hybrid (20 KB; as hex text, 40 KB). */
const MATCHES_PER_PART = 1024;

/** Candidates read back per hit wanted beyond the page (records deleted since the copy's round are dropped). */
const SLACK = 8;

/**
 * EXACT_IN_MEMORY: scores the workspace's copy in process, then reads the best hits from memory.records, where
 * expiry and the filter apply again. Null when the workspace has no copy (the caller then scans in SQL).
 */
async function searchInMemory(
  tx: Queryable,
  options: SearchOptions,
  vectors: { cache: VectorCache; tenantId: string },
  workspace: WorkspaceModel,
  q: SearchParams,
  embedding: number[],
  limit: number,
  after: KeysetAfter | null,
  now: Date,
): Promise<Keyed<SearchHit>[] | null> {
  const index: FlatIndex | null = await vectors.cache.acquire(
    tx,
    vectors.tenantId,
    workspace.id,
    embedding.length,
  );
  if (!index) return null;
  let text: TextMatches | QueryText | null = null;
  if (q.text !== null && options.textInProcess !== false) {
    // The copy's own postings match and rank the query when they can (lexemes, AND, OR, NOT: text-postings.ts);
    // PostgreSQL parses it, so stemming and stop words stay its own.
    const parsed = await tx.query<{ q: Uint8Array }>(
      `SELECT tsquerysend(websearch_to_tsquery('english'::regconfig, $1)) AS q`,
      [q.text],
    );
    const query = parseTsquery(parsed.rows[0]!.q);
    if (query) text = { query, weight: q.textWeight };
  }
  if (q.text !== null && text === null) {
    // The tenant's matching chunks (the copy keeps the records of this workspace with an embedding, as the SQL path
    // does, and each record's best chunk) as bytea, 20 bytes each: uuid_send(record id) then float4send(rank), the
    // copy's binary keys and the exact ranks. No row, text or array parsing per match, and no string per match in
    // the lookup. Parts of 1,024 matches (a 40 KB hex text each) rather than one value: tens of thousands of
    // matches as one value made megabyte strings and buffers per search, which cost the service more garbage
    // collection than the rest of the lookup.
    const parts = await tx.query<{ part: Uint8Array }>(
      `SELECT string_agg(uuid_send(m.record_id) || float4send(m.rank), ''::bytea) AS part
         FROM (SELECT record_id, rank, (row_number() OVER ()) / $2::int AS n
                 FROM memory.tenant_chunk_matches(websearch_to_tsquery('english'::regconfig, $1))) m
        GROUP BY m.n`,
      [q.text, options.matchesPerPart ?? MATCHES_PER_PART],
    );
    text = { parts: parts.rows.map((r) => r.part), weight: q.textWeight };
  }
  const filter = {
    kind: q.filter.kind,
    tag: q.filter.tag,
    authorId: q.filter.authorId,
    updatedSinceUs: q.filter.updatedSince ? q.filter.updatedSince.getTime() * 1000 : null,
    nowUs: now.getTime() * 1000,
  };
  const position = after ? { value: Number(after.value), id: after.id } : null;
  const f = filterSql(q.filter, 4);
  for (let k = limit + SLACK; ; k *= 4) {
    // Synchronous: no round changes the copy while it is scanned.
    const scan = index.scan({ embedding, filter, after: position, text, k });
    if (scan.hits.length === 0) return [];
    const rows = await tx.query<RecordRow>(
      `SELECT ${RECORD} FROM memory.records r
        WHERE r.workspace_id = $1 AND r.id = ANY($2::uuid[]) AND ${notExpired('$3')} AND r.embedding IS NOT NULL${f.sql}`,
      [workspace.id, scan.hits.map((h) => h.id), now.toISOString(), ...f.params],
    );
    const byId = new Map(rows.rows.map((row) => [row.id, row]));
    const found: Keyed<SearchHit>[] = [];
    for (const hit of scan.hits) {
      const row = byId.get(hit.id);
      if (!row) continue;
      found.push(searchHit(row, workspace, hit.score, hit.textScore, hit.vectorScore));
      if (found.length === limit) return found;
    }
    // Every candidate there was has been read: this is the last page.
    if (scan.matched <= k) return found;
  }
}
