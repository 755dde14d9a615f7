-- Coordination, issue 4 (continued): token-bucket rate limits shared by every replica, the emergency stop (per
-- tenant and global) with its append-only audit, where each intent change came from, and the bookkeeping purge.

-- Token buckets: one row per (tenant, bucket key). Every replica takes tokens from the same rows, so a limit holds
-- for the whole deployment, not per process. The app role reaches them only through take_tokens() (below).
CREATE TABLE coordination.rate_buckets (
  tenant_id uuid NOT NULL,
  bucket text NOT NULL CHECK (char_length(bucket) BETWEEN 1 AND 300),
  tokens double precision NOT NULL,
  refilled_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, bucket)
);
ALTER TABLE coordination.rate_buckets ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.rate_buckets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.rate_buckets
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT, UPDATE ON coordination.rate_buckets TO :app_role;

-- Takes p_cost tokens from every bucket in p_buckets (capacities p_capacity[i], refill p_rate[i] per second) at
-- time p_now, all or nothing. Returns 0 when taken, else the milliseconds until all of them could be taken.
-- Buckets are locked in key order (two requests naming the same buckets cannot deadlock). Runs as the caller
-- (RLS applies): call it in the tenant's transaction.
CREATE FUNCTION coordination.take_tokens(p_tenant uuid, p_buckets text[], p_capacity double precision[],
                                          p_rate double precision[], p_cost double precision, p_now timestamptz)
  RETURNS bigint
  LANGUAGE plpgsql AS $$
DECLARE
  i int;
  n int := coalesce(array_length(p_buckets, 1), 0);
  order_idx int[];
  have double precision[] := '{}';
  wait_ms double precision := 0;
  row_tokens double precision;
  row_at timestamptz;
BEGIN
  SELECT array_agg(k ORDER BY p_buckets[k]) INTO order_idx FROM generate_series(1, n) AS k;
  FOR j IN 1 .. n LOOP
    i := order_idx[j];
    INSERT INTO coordination.rate_buckets (tenant_id, bucket, tokens, refilled_at)
      VALUES (p_tenant, p_buckets[i], p_capacity[i], p_now) ON CONFLICT DO NOTHING;
    SELECT b.tokens, b.refilled_at INTO row_tokens, row_at FROM coordination.rate_buckets b
     WHERE b.tenant_id = p_tenant AND b.bucket = p_buckets[i] FOR UPDATE;
    -- Refill since the last take (a clock that went backwards refills nothing), capped at the capacity.
    have[i] := least(p_capacity[i],
                     row_tokens + greatest(0, extract(epoch FROM (p_now - row_at))) * p_rate[i]);
    IF have[i] < p_cost THEN
      -- Rounded to microseconds first: float noise (1.0000000000000009 ms) must not become a whole extra ms.
      wait_ms := greatest(wait_ms, ceil(round(((p_cost - have[i]) / p_rate[i] * 1000)::numeric, 3)));
    END IF;
  END LOOP;
  IF wait_ms > 0 THEN
    RETURN wait_ms::bigint;
  END IF;
  FOR i IN 1 .. n LOOP
    UPDATE coordination.rate_buckets SET tokens = have[i] - p_cost, refilled_at = greatest(refilled_at, p_now)
     WHERE tenant_id = p_tenant AND bucket = p_buckets[i];
  END LOOP;
  RETURN 0;
END $$;
GRANT EXECUTE ON FUNCTION coordination.take_tokens(uuid, text[], double precision[], double precision[],
  double precision, timestamptz) TO :app_role;

-- Emergency stop: at most one engaged row per scope (a tenant, or the whole deployment: tenant_id NULL). Lifting
-- sets lifted_at; engaging again inserts a new row. History stays (append-only use by the app role).
CREATE TABLE coordination.emergency_stops (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid,
  reason text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
  engaged_by text NOT NULL,
  engaged_at timestamptz NOT NULL,
  lifted_by text,
  lifted_at timestamptz,
  CHECK ((lifted_by IS NULL) = (lifted_at IS NULL))
);
CREATE UNIQUE INDEX emergency_stops_one_engaged_per_tenant ON coordination.emergency_stops (tenant_id)
  WHERE lifted_at IS NULL AND tenant_id IS NOT NULL;
CREATE UNIQUE INDEX emergency_stops_one_engaged_global ON coordination.emergency_stops ((true))
  WHERE lifted_at IS NULL AND tenant_id IS NULL;
ALTER TABLE coordination.emergency_stops ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.emergency_stops FORCE ROW LEVEL SECURITY;
-- A tenant sees and changes its own stops, and sees the global one (never changes it: operators do, as owner).
CREATE POLICY tenant_read ON coordination.emergency_stops FOR SELECT
  USING (tenant_id = runtime.current_tenant() OR tenant_id IS NULL);
CREATE POLICY tenant_insert ON coordination.emergency_stops FOR INSERT
  WITH CHECK (tenant_id = runtime.current_tenant());
CREATE POLICY tenant_update ON coordination.emergency_stops FOR UPDATE
  USING (tenant_id = runtime.current_tenant()) WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON coordination.emergency_stops TO :app_role;
GRANT UPDATE (lifted_by, lifted_at) ON coordination.emergency_stops TO :app_role;

-- Every use of the switch, append-only (who, what, when, from where). No secrets: addresses, agent strings, ids.
CREATE TABLE coordination.emergency_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id uuid,
  action text NOT NULL CHECK (action IN ('ENGAGED', 'LIFTED')),
  actor text NOT NULL,
  at timestamptz NOT NULL,
  reason text,
  origin jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(origin) = 'object')
);
ALTER TABLE coordination.emergency_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.emergency_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_read ON coordination.emergency_events FOR SELECT
  USING (tenant_id = runtime.current_tenant() OR tenant_id IS NULL);
CREATE POLICY tenant_insert ON coordination.emergency_events FOR INSERT
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON coordination.emergency_events TO :app_role;

-- What every replica needs to enforce the switch, across tenants: the engaged stops (tenant ids; NULL = global).
CREATE FUNCTION coordination.engaged_emergency_stops()
  RETURNS TABLE (tenant_id uuid, engaged_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
    SELECT s.tenant_id, s.engaged_at FROM coordination.emergency_stops s WHERE s.lifted_at IS NULL
$$;
REVOKE EXECUTE ON FUNCTION coordination.engaged_emergency_stops() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.engaged_emergency_stops() TO :app_role;

-- Where each intent change came from: {ip, forwardedFor?, userAgent?, clientId?, deviceId?, correlationId}.
-- Set for changes a request made; '{}' for the sweeper's.
ALTER TABLE coordination.intent_events ADD COLUMN origin jsonb NOT NULL DEFAULT '{}'
  CHECK (jsonb_typeof(origin) = 'object');

-- Bookkeeping that only needs to live for a while: outbox rows (listeners that were away read the intents table,
-- not the outbox) and device-report jtis (a report older than the server's 60-second window cannot verify again).
-- Ages in seconds against the database clock, which wrote both (created_at, seen_at default now()).
CREATE FUNCTION coordination.purge_intent_bookkeeping(p_outbox_age_seconds int, p_jti_age_seconds int)
  RETURNS TABLE (outbox bigint, jtis bigint)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
DECLARE
  o bigint;
  j bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'coordination.purge_intent_bookkeeping runs as its owner "%", which lacks BYPASSRLS', current_user;
  END IF;
  DELETE FROM coordination.intent_outbox WHERE created_at < now() - make_interval(secs => p_outbox_age_seconds);
  GET DIAGNOSTICS o = ROW_COUNT;
  DELETE FROM coordination.intent_report_jtis WHERE seen_at < now() - make_interval(secs => p_jti_age_seconds);
  GET DIAGNOSTICS j = ROW_COUNT;
  RETURN QUERY SELECT o, j;
END $$;
REVOKE EXECUTE ON FUNCTION coordination.purge_intent_bookkeeping(int, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.purge_intent_bookkeeping(int, int) TO :app_role;
