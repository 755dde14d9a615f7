-- Memory search at 100,000 records (issue 18, items 1 and 2): full-text that uses chunks_tsv under forced RLS, and
-- an HNSW index for cosine similarity wherever the pgvector extension (`vector`) is available (PGlite: loaded by
-- runtime/src/db/pglite.ts; PostgreSQL: only where the server has it installed). See src/search.ts.

-- 1. Full-text. `@@` (ts_match_vq) is not LEAKPROOF, so under RLS the planner must apply the tenant policy before
-- it: it reads every row of the tenant (Seq Scan) instead of the GIN index. This function runs as its owner (the
-- migration owner, which bypasses RLS, as claim_jobs requires), so `@@` may drive the index; it applies the
-- tenant predicate itself, taking the tenant from the transaction's own setting (runtime.current_tenant(), set by
-- withTenant, the same value the RLS policies read), never from an argument, plus the workspace. It therefore
-- returns exactly the (record id, best chunk rank) pairs the caller could compute through RLS, only faster. If the
-- owner ever lacked BYPASSRLS, RLS would apply inside too: same rows, a slower plan. The caller still joins the
-- records under RLS and applies expiry and filters.
CREATE FUNCTION memory.text_matches(p_workspace_id uuid, p_query tsquery)
  RETURNS TABLE (record_id uuid, text_score float8)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT c.record_id, max(ts_rank_cd(c.tsv, p_query, 32))::float8
    FROM memory.chunks c
    JOIN memory.records r ON r.tenant_id = c.tenant_id AND r.id = c.record_id
   WHERE c.tenant_id = runtime.current_tenant()
     AND r.workspace_id = p_workspace_id
     AND c.tsv @@ p_query
   GROUP BY c.record_id
$$;
REVOKE EXECUTE ON FUNCTION memory.text_matches(uuid, tsquery) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory.text_matches(uuid, tsquery) TO :memory_role;

-- 2. pgvector, where available: `records.embedding_v` (a generated copy of the exact real[] embedding, so every
-- writer maintains it without knowing) and one partial HNSW index (cosine) per embedding dimension in use, on
-- (embedding_v::vector(N)) WHERE cardinality(embedding) = N: HNSW needs a fixed dimension and workspaces each have
-- their own. An index is created when a workspace first gets its dimension (trigger below, as the owner: creating
-- an index needs it) and here for the dimensions already in use. pgvector's HNSW indexes up to 2000 dimensions;
-- larger workspaces, and servers without the extension, use the exact scan.
DO $$
DECLARE d int;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    RETURN;
  END IF;
  CREATE EXTENSION IF NOT EXISTS vector;
  ALTER TABLE memory.records ADD COLUMN embedding_v vector GENERATED ALWAYS AS (embedding::vector) STORED;
  FOR d IN SELECT DISTINCT embedding_dim FROM memory.workspaces WHERE embedding_dim BETWEEN 1 AND 2000 LOOP
    EXECUTE format(
      'CREATE INDEX IF NOT EXISTS %I ON memory.records USING hnsw ((embedding_v::vector(%s)) vector_cosine_ops) '
      'WHERE cardinality(embedding) = %s', 'records_hnsw_' || d, d, d);
  END LOOP;
END $$;

-- Creates the HNSW index of a workspace's dimension if it is missing (no-op without pgvector, or above 2000
-- dimensions). Fires once a workspace has a dimension; the index is shared by every workspace of that dimension
-- (the query also filters by workspace), so it is built once per dimension, on the first workspace of it, holding
-- a SHARE lock on memory.records until that transaction ends. A trigger function: nobody may call it directly.
CREATE FUNCTION memory.ensure_vector_index() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp AS $$
DECLARE
  d int := NEW.embedding_dim;
  ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
                WHERE e.extname = 'vector');
BEGIN
  IF d IS NULL OR d > 2000 OR ext IS NULL
     OR NOT EXISTS (SELECT 1 FROM pg_attribute
                     WHERE attrelid = 'memory.records'::regclass AND attname = 'embedding_v' AND NOT attisdropped)
     OR to_regclass('memory.records_hnsw_' || d) IS NOT NULL THEN
    RETURN NULL;
  END IF;
  BEGIN
    EXECUTE format(
      'CREATE INDEX IF NOT EXISTS %I ON memory.records USING hnsw ((embedding_v::%I.vector(%s)) %I.vector_cosine_ops) '
      'WHERE cardinality(embedding) = %s', 'records_hnsw_' || d, ext, d, ext, d);
  EXCEPTION WHEN duplicate_table OR unique_violation THEN
    NULL; -- a concurrent transaction created it first
  END;
  RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION memory.ensure_vector_index() FROM PUBLIC;
CREATE TRIGGER workspaces_vector_index
  AFTER INSERT OR UPDATE OF embedding_dim ON memory.workspaces
  FOR EACH ROW WHEN (NEW.embedding_dim IS NOT NULL)
  EXECUTE FUNCTION memory.ensure_vector_index();
