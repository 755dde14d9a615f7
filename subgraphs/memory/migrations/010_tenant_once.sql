-- The full-text definer functions compute the caller's tenant once per call, not once per chunk (issue 18).
-- `c.tenant_id = runtime.current_tenant()` is a filter the bitmap heap scan evaluates on every chunk it reads
-- (current_setting and a text → uuid cast each time): ~10 ms of a ~50 ms call when a word matches 20,000 chunks of
-- 1,000,000, on PostgreSQL 15. As a scalar subquery, `(SELECT runtime.current_tenant())`, it is an InitPlan:
-- evaluated once, then compared as a value. Same predicate and setting (which cannot change within a statement),
-- still never an argument; same results, grants and isolation (CREATE OR REPLACE keeps the grants).
CREATE OR REPLACE FUNCTION memory.text_matches(p_workspace_id uuid, p_query tsquery)
  RETURNS TABLE (record_id uuid, text_score float8)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT m.record_id, max(m.rank)::float8
    FROM (SELECT c.record_id, ts_rank_cd(c.tsv, p_query, 32) AS rank
            FROM memory.chunks c
            JOIN memory.records r ON r.tenant_id = c.tenant_id AND r.id = c.record_id
           WHERE c.tenant_id = (SELECT runtime.current_tenant())
             AND r.workspace_id = p_workspace_id
             AND c.tsv @@ p_query
          OFFSET 0) m
   GROUP BY m.record_id
$$;

CREATE OR REPLACE FUNCTION memory.tenant_chunk_matches(p_query tsquery)
  RETURNS TABLE (record_id uuid, rank real)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT c.record_id, ts_rank_cd(c.tsv, p_query, 32)
    FROM memory.chunks c
   WHERE c.tenant_id = (SELECT runtime.current_tenant())
     AND c.tsv @@ p_query
$$;

-- Kept for instances of the release before migration 009 (see there).
CREATE OR REPLACE FUNCTION memory.tenant_text_matches(p_query tsquery)
  RETURNS TABLE (record_id uuid, text_score float8)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT m.record_id, max(m.rank)::float8
    FROM (SELECT c.record_id, ts_rank_cd(c.tsv, p_query, 32) AS rank
            FROM memory.chunks c
           WHERE c.tenant_id = (SELECT runtime.current_tenant())
             AND c.tsv @@ p_query
          OFFSET 0) m
   GROUP BY m.record_id
$$;
