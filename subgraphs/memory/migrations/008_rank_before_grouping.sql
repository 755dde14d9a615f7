-- Full-text candidates rank each chunk where it is read, then group (issue 18). Migrations 005 and 007 wrote
-- `max(ts_rank_cd(tsv, q, 32)) ... GROUP BY record_id`: the planner sorts the matching chunks by record before the
-- aggregate computes the rank, so every chunk's tsvector (hundreds of bytes) went through the sort, which spilled to
-- disk past work_mem: with 20,000 matches (a one-word query at 1,000,000 records), an 11 MB external merge, about a
-- fifth of the function's time. Ranking in a subquery the planner may not flatten (OFFSET 0) leaves (record, rank)
-- pairs, 24 bytes each, which a hash aggregate groups in memory. Same results, same grants, same isolation: the
-- tenant and workspace predicates are unchanged.
CREATE OR REPLACE FUNCTION memory.text_matches(p_workspace_id uuid, p_query tsquery)
  RETURNS TABLE (record_id uuid, text_score float8)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT m.record_id, max(m.rank)::float8
    FROM (SELECT c.record_id, ts_rank_cd(c.tsv, p_query, 32) AS rank
            FROM memory.chunks c
            JOIN memory.records r ON r.tenant_id = c.tenant_id AND r.id = c.record_id
           WHERE c.tenant_id = runtime.current_tenant()
             AND r.workspace_id = p_workspace_id
             AND c.tsv @@ p_query
          OFFSET 0) m
   GROUP BY m.record_id
$$;

CREATE OR REPLACE FUNCTION memory.tenant_text_matches(p_query tsquery)
  RETURNS TABLE (record_id uuid, text_score float8)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT m.record_id, max(m.rank)::float8
    FROM (SELECT c.record_id, ts_rank_cd(c.tsv, p_query, 32) AS rank
            FROM memory.chunks c
           WHERE c.tenant_id = runtime.current_tenant()
             AND c.tsv @@ p_query
          OFFSET 0) m
   GROUP BY m.record_id
$$;
