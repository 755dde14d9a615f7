-- Memory, issue 6: workspace policies, record metadata / embeddings / expiry, chunks for full-text search, the
-- indexing job queue, and the audit trail of tenant-wide erasure. Every new table has tenant_id, RLS ENABLEd and
-- FORCEd with the tenant policy of 001, and keys (tenant_id, …), so nothing can point across tenants.

-- Workspaces: what the secret filter does on a hit (REJECT the write, or REDACT the match), and the embedding
-- dimension, fixed at creation or by the first record with an embedding (then every embedding must have it).
ALTER TABLE memory.workspaces
  ADD COLUMN secret_policy text NOT NULL DEFAULT 'REJECT' CHECK (secret_policy IN ('REJECT', 'REDACT')),
  ADD COLUMN embedding_dim int CHECK (embedding_dim BETWEEN 1 AND 4096);
GRANT UPDATE (embedding_dim) ON memory.workspaces TO :app_role;
-- deleteWorkspace and eraseTenantMemory; records, chunks and jobs follow by ON DELETE CASCADE in the same statement.
GRANT DELETE ON memory.workspaces TO :app_role;

-- Records: metadata is a JSON object (bounded by the API: size, depth, keys); the embedding is real[] of the
-- workspace's dimension with its Euclidean norm kept beside it (cosine similarity is an exact scan in SQL, see
-- src/search.ts; pgvector is not assumed). expires_at: past it the record is invisible at once (reads compare it
-- with the server clock passed as a parameter) and the sweeper purges it.
ALTER TABLE memory.records
  ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
  ADD COLUMN embedding real[] CHECK (
    embedding IS NULL OR (array_ndims(embedding) = 1 AND cardinality(embedding) BETWEEN 1 AND 4096)),
  ADD COLUMN embedding_norm float8 CHECK ((embedding IS NULL) = (embedding_norm IS NULL) AND
    (embedding_norm IS NULL OR embedding_norm > 0)),
  ADD COLUMN expires_at timestamptz;
GRANT DELETE ON memory.records TO :app_role;
CREATE INDEX records_expiry ON memory.records (expires_at) WHERE expires_at IS NOT NULL;
-- The tag filter (tags @> ARRAY[tag]).
CREATE INDEX records_tags ON memory.records USING gin (tags);

-- Search data: a record's content cut into overlapping chunks by the indexing job, each with its tsvector
-- (english). Full-text rank of a record = the best rank among its chunks. Deleted with the record.
CREATE TABLE memory.chunks (
  tenant_id uuid NOT NULL,
  record_id uuid NOT NULL,
  n int NOT NULL CHECK (n >= 0),
  -- The record version the chunk was cut from.
  record_version int NOT NULL CHECK (record_version >= 1),
  content text NOT NULL,
  tsv tsvector NOT NULL GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
  PRIMARY KEY (tenant_id, record_id, n),
  FOREIGN KEY (tenant_id, record_id) REFERENCES memory.records (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX chunks_tsv ON memory.chunks USING gin (tsv);
ALTER TABLE memory.chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory.chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory.chunks
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT, DELETE ON memory.chunks TO :app_role;

-- The indexing queue. QUEUED → RUNNING (claimed with FOR UPDATE SKIP LOCKED, under a lease) → SUCCEEDED, or
-- FAILED (to retry at run_after, with backoff) → … → DEAD after max_attempts. A RUNNING job whose lease ran out
-- (its worker died) is claimed again. Times come from the server's clock (a parameter), so fake clocks work.
CREATE TABLE memory.jobs (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  record_id uuid NOT NULL,
  workspace_id uuid NOT NULL,
  state text NOT NULL DEFAULT 'QUEUED'
    CHECK (state IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'DEAD')),
  attempts int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts int NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
  -- What went wrong last (our own message, bounded; never record content).
  last_error text CHECK (char_length(last_error) <= 1000),
  run_after timestamptz NOT NULL,
  locked_until timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, record_id) REFERENCES memory.records (tenant_id, id) ON DELETE CASCADE
);
-- The claim's scans: due jobs by run_after, expired leases by locked_until.
CREATE INDEX jobs_due ON memory.jobs (run_after) WHERE state IN ('QUEUED', 'FAILED');
CREATE INDEX jobs_leased ON memory.jobs (locked_until) WHERE state = 'RUNNING';
-- One waiting job per record is enough: the job indexes whatever the record holds when it runs.
CREATE UNIQUE INDEX jobs_one_queued ON memory.jobs (tenant_id, record_id) WHERE state = 'QUEUED';
-- Query.memoryJobs: by state, newest first.
CREATE INDEX jobs_by_state ON memory.jobs (tenant_id, state, created_at DESC, id DESC);
ALTER TABLE memory.jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory.jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory.jobs
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON memory.jobs TO :app_role;
GRANT UPDATE (state, attempts, last_error, run_after, locked_until, updated_at) ON memory.jobs TO :app_role;

-- Append-only audit of tenant-wide actions (eraseTenantMemory): who, when, how much; never content.
CREATE TABLE memory.audit (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  at timestamptz NOT NULL,
  actor text NOT NULL,
  action text NOT NULL CHECK (action IN ('ERASE_TENANT_MEMORY')),
  details jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object'),
  PRIMARY KEY (tenant_id, id)
);
ALTER TABLE memory.audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory.audit FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory.audit
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
REVOKE ALL ON memory.audit FROM :app_role;
GRANT SELECT, INSERT ON memory.audit TO :app_role;

-- Cross-tenant background work runs as the app role through these definer functions (their owner must bypass
-- RLS, as coordination.due_intents requires); each returns only ids, and the work on a job then runs in its
-- tenant's transaction.

-- Claims up to p_limit due jobs (QUEUED or FAILED with run_after <= p_now, or RUNNING with an expired lease):
-- RUNNING, attempts + 1, leased until p_now + p_lease_seconds. SKIP LOCKED: concurrent workers take disjoint jobs.
CREATE FUNCTION memory.claim_jobs(p_now timestamptz, p_limit int, p_lease_seconds int)
  RETURNS TABLE (job_tenant_id uuid, job_id uuid, job_record_id uuid, job_attempts int, job_max_attempts int)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'memory.claim_jobs runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  RETURN QUERY
    UPDATE memory.jobs j
       SET state = 'RUNNING', attempts = j.attempts + 1, updated_at = p_now,
           locked_until = p_now + make_interval(secs => p_lease_seconds)
     WHERE (j.tenant_id, j.id) IN (
       SELECT q.tenant_id, q.id FROM memory.jobs q
        WHERE (q.state IN ('QUEUED', 'FAILED') AND q.run_after <= p_now)
           OR (q.state = 'RUNNING' AND q.locked_until <= p_now)
        ORDER BY q.run_after, q.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED)
    RETURNING j.tenant_id, j.id, j.record_id, j.attempts, j.max_attempts;
END $$;
REVOKE EXECUTE ON FUNCTION memory.claim_jobs(timestamptz, int, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory.claim_jobs(timestamptz, int, int) TO :app_role;

-- Purges up to p_limit records whose expires_at <= p_now (chunks and jobs go with them). Returns how many.
CREATE FUNCTION memory.purge_expired_records(p_now timestamptz, p_limit int)
  RETURNS int
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp AS $$
DECLARE v_count int;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'memory.purge_expired_records runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  DELETE FROM memory.records r
   WHERE (r.tenant_id, r.id) IN (
     SELECT e.tenant_id, e.id FROM memory.records e
      WHERE e.expires_at IS NOT NULL AND e.expires_at <= p_now
      ORDER BY e.expires_at
      LIMIT p_limit
      FOR UPDATE SKIP LOCKED);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  RETURN v_count;
END $$;
REVOKE EXECUTE ON FUNCTION memory.purge_expired_records(timestamptz, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory.purge_expired_records(timestamptz, int) TO :app_role;
