-- Memory search at 100,000 records on PostgreSQL without pgvector (issue 18): the memory subgraph keeps an exact,
-- in-process copy of each searched workspace's embeddings (src/vector-index/) and scans it in a few milliseconds
-- instead of comparing every row in SQL. This migration gives that copy a change feed it can follow without locks:
--
-- * `records.search_xid`: the 64-bit id of the transaction that last wrote the row (insert or update), set by a
--   trigger, so every writer (the API, putMemories, the sweeper, hand-written SQL) maintains it without knowing.
-- * `memory.search_tombstones`: one row per deleted record that had an embedding (workspace, record, deleting
--   transaction), written by a trigger. Nothing of the record's content: an id and two transaction stamps. A
--   workspace deleted as a whole (deleteWorkspace, eraseTenantMemory) leaves none: its copy dies with it.
--
-- A reader follows the feed as outbox pollers do (src/vector-index/sync.ts): each round is ONE statement that reads
-- `pg_snapshot_xmin(pg_current_snapshot())` (every transaction below it has ended) together with the rows and
-- tombstones stamped at or above the previous round's xmin. A transaction still running at one round has an id at
-- or above that round's xmin, so the next round reads what it wrote once it has committed; nothing is missed, and
-- what is read twice is applied idempotently (a row read is the record's state in that statement's snapshot).
-- Rows written before this migration get 1 (older than any watermark: a first load reads every row anyway).
ALTER TABLE memory.records ADD COLUMN search_xid xid8 NOT NULL DEFAULT '1';
-- The feed's scan (search_xid >= the last xmin), and the first load's keyset (search_xid, id) of one workspace.
CREATE INDEX records_search_feed ON memory.records (tenant_id, workspace_id, search_xid, id);

CREATE FUNCTION memory.stamp_search_xid() RETURNS trigger
  LANGUAGE plpgsql SET search_path = memory, pg_temp AS $$
BEGIN
  NEW.search_xid := pg_current_xact_id();
  RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION memory.stamp_search_xid() FROM PUBLIC;
CREATE TRIGGER records_search_xid
  BEFORE INSERT OR UPDATE ON memory.records
  FOR EACH ROW EXECUTE FUNCTION memory.stamp_search_xid();

CREATE TABLE memory.search_tombstones (
  tenant_id uuid NOT NULL,
  workspace_id uuid NOT NULL,
  record_id uuid NOT NULL,
  deleted_xid xid8 NOT NULL,
  -- The database's clock; the sweeper drops tombstones a day old (a copy not synced for an hour reloads).
  deleted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX search_tombstones_feed ON memory.search_tombstones (tenant_id, workspace_id, deleted_xid);
CREATE INDEX search_tombstones_age ON memory.search_tombstones (deleted_at);
ALTER TABLE memory.search_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory.search_tombstones FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory.search_tombstones
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
-- Read-only for the service: only the trigger (as the owner) writes, only the sweeper's function deletes.
GRANT SELECT ON memory.search_tombstones TO :memory_role;

-- After a record with an embedding is deleted, unless its workspace is being deleted with it (a cascade from
-- memory.workspaces: the workspace row is already gone in this statement's view). SECURITY DEFINER: the service
-- role cannot write tombstones itself, and the sweeper deletes across tenants.
CREATE FUNCTION memory.record_search_tombstone() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM memory.workspaces w WHERE w.tenant_id = OLD.tenant_id AND w.id = OLD.workspace_id) THEN
    INSERT INTO memory.search_tombstones (tenant_id, workspace_id, record_id, deleted_xid)
    VALUES (OLD.tenant_id, OLD.workspace_id, OLD.id, pg_current_xact_id());
  END IF;
  RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION memory.record_search_tombstone() FROM PUBLIC;
CREATE TRIGGER records_search_tombstone
  AFTER DELETE ON memory.records
  FOR EACH ROW WHEN (OLD.embedding IS NOT NULL)
  EXECUTE FUNCTION memory.record_search_tombstone();

-- Tombstones older than p_before go (the sweeper, across tenants; its owner bypasses RLS). Returns how many.
CREATE FUNCTION memory.purge_search_tombstones(p_before timestamptz, p_limit int)
  RETURNS int
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp AS $$
DECLARE v_count int;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'memory.purge_search_tombstones runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  DELETE FROM memory.search_tombstones t
   WHERE t.ctid IN (SELECT o.ctid FROM memory.search_tombstones o WHERE o.deleted_at < p_before LIMIT p_limit);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  RETURN v_count;
END $$;
REVOKE EXECUTE ON FUNCTION memory.purge_search_tombstones(timestamptz, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory.purge_search_tombstones(timestamptz, int) TO :memory_role;

-- Hybrid search with the in-process copy: the full-text matches of the caller's tenant without memory.text_matches'
-- join to the workspace's records (at 100,000 records that join, a hash of every record id of the workspace, was
-- most of a hybrid query's time); the copy knows which ids belong to the workspace and drops the rest. Tenant from
-- the transaction's own setting, as in text_matches (migration 005), never from an argument.
CREATE FUNCTION memory.tenant_text_matches(p_query tsquery)
  RETURNS TABLE (record_id uuid, text_score float8)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp ROWS 200 AS $$
  SELECT c.record_id, max(ts_rank_cd(c.tsv, p_query, 32))::float8
    FROM memory.chunks c
   WHERE c.tenant_id = runtime.current_tenant()
     AND c.tsv @@ p_query
   GROUP BY c.record_id
$$;
REVOKE EXECUTE ON FUNCTION memory.tenant_text_matches(tsquery) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory.tenant_text_matches(tsquery) TO :memory_role;
