-- Hybrid search with the in-process copy reads the tenant's full-text matches one row per matching chunk, not per
-- record (issue 18). At 1,000,000 records a one-word query matches ~20,000 chunks, and tenant_text_matches' hash
-- aggregate by record was about a fifth of the function's time (~50 ms with it, ~40 without, on PostgreSQL 15);
-- the copy keeps the greatest rank per record itself, where looking the ids up already touches each record
-- (src/vector-index/flat-index.ts). The rank is ts_rank_cd's own real, four bytes a match on the wire, which the
-- copy widens to float8 exactly as max(...)::float8 does on the SQL path. Same tenant predicate, from the
-- transaction's own setting, never an argument; same grants.
--
-- tenant_text_matches (migration 008) stays: instances of the previous release call it until they are replaced.
CREATE FUNCTION memory.tenant_chunk_matches(p_query tsquery)
  RETURNS TABLE (record_id uuid, rank real)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT c.record_id, ts_rank_cd(c.tsv, p_query, 32)
    FROM memory.chunks c
   WHERE c.tenant_id = runtime.current_tenant()
     AND c.tsv @@ p_query
$$;
REVOKE EXECUTE ON FUNCTION memory.tenant_chunk_matches(tsquery) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory.tenant_chunk_matches(tsquery) TO :memory_role;
