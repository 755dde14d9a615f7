-- Catalog supply chain (issue 7, DESIGN.md §5): package upload into quarantine, sandboxed analysis with a signed
-- in-toto statement, human review with an append-only audit trail, and a TUF repository per tenant with one
-- delegated targets role per channel. Every table is tenant data under RLS (ENABLE + FORCE); the two background
-- jobs that work across tenants (analysis queue, metadata refresh) list their work through SECURITY DEFINER
-- functions and then write in the tenant's own transaction.

-- The package of a release: where it is stored and its digests (set once, by the upload).
ALTER TABLE catalog.releases ADD COLUMN storage_key text;
ALTER TABLE catalog.releases ADD COLUMN size_bytes bigint CHECK (size_bytes >= 0);
ALTER TABLE catalog.releases ADD COLUMN sha256 text CHECK (sha256 ~ '^[0-9a-f]{64}$');
ALTER TABLE catalog.releases ADD COLUMN sha512 text CHECK (sha512 ~ '^[0-9a-f]{128}$');
ALTER TABLE catalog.releases ADD COLUMN uploaded_by text;
ALTER TABLE catalog.releases ADD COLUMN uploaded_at timestamptz;
-- Why the release is ANALYSIS_FAILED or REJECTED (the latest reason; the full history is in review_events).
ALTER TABLE catalog.releases ADD COLUMN state_reason text CHECK (char_length(state_reason) <= 2000);
-- The TUF channel an APPROVED release is published in.
ALTER TABLE catalog.releases ADD COLUMN channel text CHECK (channel IN ('alpha', 'beta', 'stable'));
ALTER TABLE catalog.releases ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
GRANT UPDATE (storage_key, size_bytes, sha256, sha512, uploaded_by, uploaded_at, state, state_reason, channel,
  updated_at) ON catalog.releases TO :app_role;
-- Query.reviewQueue: oldest upload first among IN_REVIEW releases.
CREATE INDEX releases_review_queue ON catalog.releases (tenant_id, uploaded_at, id) WHERE state = 'IN_REVIEW';

-- One analysis job per uploaded package. QUEUED → RUNNING → SUCCEEDED (the analyzer ran; the verdict says whether
-- the package passed) or FAILED (the analyzer crashed, timed out or ran out of memory; reason says which). A RUNNING
-- job whose started_at is older than the analyzer's timeout belonged to a process that died: it is claimed again.
CREATE TABLE catalog.analyses (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  release_id uuid NOT NULL,
  state text NOT NULL DEFAULT 'QUEUED' CHECK (state IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED')),
  attempts int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  verdict text CHECK (verdict IN ('PASS', 'FAIL')),
  reason text CHECK (char_length(reason) <= 2000),
  findings jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- The DSSE envelope (JSON text, exactly as signed) holding the in-toto statement, and the key that signed it.
  envelope text,
  key_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (tenant_id, id),
  CONSTRAINT analyses_one_per_release UNIQUE (tenant_id, release_id),
  FOREIGN KEY (tenant_id, release_id) REFERENCES catalog.releases (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX analyses_pending ON catalog.analyses (state, started_at) WHERE state IN ('QUEUED', 'RUNNING');
ALTER TABLE catalog.analyses ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.analyses FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.analyses
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT, UPDATE ON catalog.analyses TO :app_role;

-- Every decision and pipeline step on a release, append-only: the app role may insert and read, never change or
-- delete, and a trigger refuses UPDATE and DELETE even to the owner.
CREATE TABLE catalog.review_events (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  release_id uuid NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  action text NOT NULL CHECK (action IN ('UPLOADED', 'UPLOAD_REJECTED', 'ANALYSIS_PASSED', 'ANALYSIS_FAILED',
    'APPROVED', 'REJECTED', 'APPEALED', 'PROMOTED', 'REVOKED')),
  -- A user id, or 'system' for the pipeline.
  actor text NOT NULL,
  reason text CHECK (char_length(reason) <= 2000),
  channel text CHECK (channel IN ('alpha', 'beta', 'stable')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, release_id) REFERENCES catalog.releases (tenant_id, id)
);
CREATE INDEX review_events_by_release ON catalog.review_events (tenant_id, release_id, seq);
ALTER TABLE catalog.review_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.review_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.review_events
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON catalog.review_events TO :app_role;
CREATE FUNCTION catalog.review_events_append_only() RETURNS trigger
  LANGUAGE plpgsql SET search_path = catalog, pg_temp AS $$
BEGIN
  RAISE EXCEPTION 'catalog.review_events is append-only (% refused)', TG_OP;
END $$;
CREATE TRIGGER review_events_append_only BEFORE UPDATE OR DELETE ON catalog.review_events
  FOR EACH ROW EXECUTE FUNCTION catalog.review_events_append_only();

-- Signing keys of a tenant: the analyzer key (ES256, signs DSSE envelopes) and the TUF role keys (ed25519). Stored
-- unencrypted (production would keep them in a KMS). A revoked key stays for the record and signs nothing.
CREATE TABLE catalog.signing_keys (
  tenant_id uuid NOT NULL,
  key_id text NOT NULL,
  -- 'analyzer', or the TUF role: root, targets, snapshot, timestamp, alpha, beta, stable.
  role text NOT NULL CHECK (role IN ('analyzer', 'root', 'targets', 'snapshot', 'timestamp', 'alpha', 'beta', 'stable')),
  algorithm text NOT NULL CHECK (algorithm IN ('ES256', 'ed25519')),
  public_key text NOT NULL,
  private_key text NOT NULL,
  state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'revoked')),
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  PRIMARY KEY (tenant_id, key_id)
);
CREATE INDEX signing_keys_active ON catalog.signing_keys (tenant_id, role) WHERE state = 'active';
ALTER TABLE catalog.signing_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.signing_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.signing_keys
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON catalog.signing_keys TO :app_role;
GRANT UPDATE (state, revoked_at) ON catalog.signing_keys TO :app_role;

-- The TUF repository of a tenant: the current version of each role (one row, locked while publishing, so changes
-- serialise) and the thresholds it was created with.
CREATE TABLE catalog.tuf_repositories (
  tenant_id uuid NOT NULL PRIMARY KEY,
  versions jsonb NOT NULL,
  thresholds jsonb NOT NULL,
  timestamp_expires_at timestamptz NOT NULL,
  snapshot_expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE catalog.tuf_repositories ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.tuf_repositories FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.tuf_repositories
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT, UPDATE ON catalog.tuf_repositories TO :app_role;

-- Every signed metadata file, per role and version (consistent snapshots: served as N.<role>.json; the newest
-- timestamp also as timestamp.json). Never changed once written.
CREATE TABLE catalog.tuf_metadata (
  tenant_id uuid NOT NULL,
  role text NOT NULL CHECK (role IN ('root', 'targets', 'snapshot', 'timestamp', 'alpha', 'beta', 'stable')),
  version int NOT NULL CHECK (version >= 1),
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, role, version)
);
ALTER TABLE catalog.tuf_metadata ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.tuf_metadata FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.tuf_metadata
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON catalog.tuf_metadata TO :app_role;

-- What each channel role currently lists: one target per release (a release is in one channel at a time).
CREATE TABLE catalog.tuf_targets (
  tenant_id uuid NOT NULL,
  release_id uuid NOT NULL,
  channel text NOT NULL CHECK (channel IN ('alpha', 'beta', 'stable')),
  path text NOT NULL,
  length bigint NOT NULL,
  sha256 text NOT NULL,
  sha512 text NOT NULL,
  storage_key text NOT NULL,
  PRIMARY KEY (tenant_id, release_id),
  CONSTRAINT tuf_targets_path_unique UNIQUE (tenant_id, path),
  FOREIGN KEY (tenant_id, release_id) REFERENCES catalog.releases (tenant_id, id)
);
ALTER TABLE catalog.tuf_targets ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.tuf_targets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.tuf_targets
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON catalog.tuf_targets TO :app_role;

-- The analysis queue works across tenants: this claims one due job (QUEUED, or RUNNING but started before
-- p_stale_before, i.e. orphaned by a process that died) and marks it RUNNING, returning what the runner needs.
CREATE FUNCTION catalog.claim_analysis(p_now timestamptz, p_stale_before timestamptz)
  RETURNS TABLE (tenant_id uuid, id uuid, release_id uuid, attempts int)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = catalog, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'catalog.claim_analysis runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  RETURN QUERY
    UPDATE catalog.analyses a SET state = 'RUNNING', started_at = p_now, attempts = a.attempts + 1
     WHERE (a.tenant_id, a.id) = (
       SELECT q.tenant_id, q.id FROM catalog.analyses q
        WHERE q.state = 'QUEUED' OR (q.state = 'RUNNING' AND q.started_at < p_stale_before)
        ORDER BY q.created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING a.tenant_id, a.id, a.release_id, a.attempts;
END $$;
REVOKE EXECUTE ON FUNCTION catalog.claim_analysis(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION catalog.claim_analysis(timestamptz, timestamptz) TO :app_role;

-- Tenants whose timestamp (or snapshot) metadata expires before p_before: the refresher re-signs them.
CREATE FUNCTION catalog.tuf_repositories_due(p_before timestamptz, p_limit int)
  RETURNS TABLE (tenant_id uuid)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = catalog, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'catalog.tuf_repositories_due runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  RETURN QUERY
    SELECT r.tenant_id FROM catalog.tuf_repositories r
     WHERE r.timestamp_expires_at < p_before OR r.snapshot_expires_at < p_before
     ORDER BY r.timestamp_expires_at LIMIT p_limit;
END $$;
REVOKE EXECUTE ON FUNCTION catalog.tuf_repositories_due(timestamptz, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION catalog.tuf_repositories_due(timestamptz, int) TO :app_role;
