-- Shared by every subgraph: the tenant of the current transaction and the idempotency keys.
CREATE SCHEMA IF NOT EXISTS runtime;
GRANT USAGE ON SCHEMA runtime TO :app_role;

-- The tenant and principal a request works for; set per transaction by withTenant() (set_config(..., true)).
CREATE OR REPLACE FUNCTION runtime.current_tenant() RETURNS uuid
  LANGUAGE sql STABLE AS $$ SELECT nullif(current_setting('app.tenant_id', true), '')::uuid $$;
CREATE OR REPLACE FUNCTION runtime.current_principal() RETURNS text
  LANGUAGE sql STABLE AS $$ SELECT nullif(current_setting('app.principal_id', true), '') $$;
GRANT EXECUTE ON FUNCTION runtime.current_tenant() TO :app_role;
GRANT EXECUTE ON FUNCTION runtime.current_principal() TO :app_role;

CREATE TABLE runtime.idempotency_keys (
  tenant_id uuid NOT NULL,
  principal_id text NOT NULL,
  key text NOT NULL,
  operation text NOT NULL,
  fingerprint text NOT NULL,
  response jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, principal_id, key)
);
CREATE INDEX idempotency_keys_expires_at ON runtime.idempotency_keys (expires_at);
ALTER TABLE runtime.idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE runtime.idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON runtime.idempotency_keys
  USING (tenant_id = runtime.current_tenant() AND principal_id = runtime.current_principal())
  WITH CHECK (tenant_id = runtime.current_tenant() AND principal_id = runtime.current_principal());
GRANT SELECT, INSERT, DELETE ON runtime.idempotency_keys TO :app_role;

-- The sweeper deletes expired keys of every tenant; it runs as the app role through this definer function.
CREATE OR REPLACE FUNCTION runtime.purge_expired_idempotency_keys(batch int) RETURNS int
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = runtime, pg_temp AS $$
DECLARE n int;
BEGIN
  DELETE FROM runtime.idempotency_keys
   WHERE ctid IN (SELECT ctid FROM runtime.idempotency_keys WHERE expires_at < now() LIMIT batch);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
REVOKE ALL ON FUNCTION runtime.purge_expired_idempotency_keys(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION runtime.purge_expired_idempotency_keys(int) TO :app_role;
