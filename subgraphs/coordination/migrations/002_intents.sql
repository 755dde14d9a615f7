-- Coordination: signed command intents for devices (DESIGN.md §1 states, §5 Intents; issue 4).
-- Tenant data has RLS (FORCE). The intent's state changes only along the table in src/intent-machine.ts; every
-- change is an append-only event written in the same transaction, with an outbox row and a NOTIFY for fan-out.

-- Intent signing keys: coordination's own (not identity's token keys). Never readable by the app role: signing and
-- the JWKS go through the SECURITY DEFINER functions below. state: one 'active' (signs), at most one 'pending'
-- (published ahead of rotation), 'retired' ones stay published while intents they signed can still be valid.
CREATE TABLE coordination.intent_signing_keys (
  kid text PRIMARY KEY,
  alg text NOT NULL DEFAULT 'ES256' CHECK (alg = 'ES256'),
  state text NOT NULL CHECK (state IN ('pending', 'active', 'retired')),
  public_jwk jsonb NOT NULL CHECK (NOT (public_jwk ? 'd')),
  private_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  activated_at timestamptz,
  retired_at timestamptz
);
CREATE UNIQUE INDEX intent_signing_keys_one_active ON coordination.intent_signing_keys ((true)) WHERE state = 'active';
CREATE UNIQUE INDEX intent_signing_keys_one_pending ON coordination.intent_signing_keys ((true)) WHERE state = 'pending';
REVOKE ALL ON coordination.intent_signing_keys FROM PUBLIC;

-- Public halves for the JWKS: active, pending, and keys retired within the last 2 hours (intents live ≤ 1 hour).
CREATE FUNCTION coordination.published_intent_keys()
  RETURNS TABLE (kid text, alg text, public_jwk jsonb)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
    SELECT k.kid, k.alg, k.public_jwk FROM coordination.intent_signing_keys k
     WHERE k.state <> 'retired' OR k.retired_at > now() - interval '2 hours'
     ORDER BY k.created_at DESC, k.kid
$$;

-- The key new intents are signed with (private half).
CREATE FUNCTION coordination.active_intent_key()
  RETURNS TABLE (kid text, alg text, private_jwk jsonb)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
    SELECT k.kid, k.alg, k.private_jwk FROM coordination.intent_signing_keys k WHERE k.state = 'active'
$$;

-- Adds a key as active when there is none, else as pending when there is none; otherwise does nothing (several
-- replicas starting at once all call this; the unique indexes let exactly one candidate in per slot).
CREATE FUNCTION coordination.offer_intent_key(p_kid text, p_public_jwk jsonb, p_private_jwk jsonb)
  RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
BEGIN
  IF p_public_jwk ? 'd' THEN
    RAISE EXCEPTION 'public_jwk must not contain the private key';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM coordination.intent_signing_keys WHERE state = 'active') THEN
    INSERT INTO coordination.intent_signing_keys (kid, state, public_jwk, private_jwk, activated_at)
      VALUES (p_kid, 'active', p_public_jwk, p_private_jwk, now()) ON CONFLICT DO NOTHING;
    IF FOUND THEN RETURN 'active'; END IF;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM coordination.intent_signing_keys WHERE state = 'pending') THEN
    INSERT INTO coordination.intent_signing_keys (kid, state, public_jwk, private_jwk)
      VALUES (p_kid, 'pending', p_public_jwk, p_private_jwk) ON CONFLICT DO NOTHING;
    IF FOUND THEN RETURN 'pending'; END IF;
  END IF;
  RETURN 'unused';
END $$;

-- Rotation: when the active key is older than p_min_age_seconds and a pending key exists, the active key retires
-- and the pending one (published since it was added) becomes active. Returns the active kid after the call.
CREATE FUNCTION coordination.rotate_intent_key(p_min_age_seconds int)
  RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
DECLARE
  v_active coordination.intent_signing_keys;
  v_pending coordination.intent_signing_keys;
BEGIN
  SELECT * INTO v_active FROM coordination.intent_signing_keys WHERE state = 'active' FOR UPDATE;
  SELECT * INTO v_pending FROM coordination.intent_signing_keys WHERE state = 'pending' FOR UPDATE;
  IF v_active.kid IS NULL OR v_pending.kid IS NULL
     OR v_active.activated_at > now() - make_interval(secs => p_min_age_seconds) THEN
    RETURN v_active.kid;
  END IF;
  UPDATE coordination.intent_signing_keys SET state = 'retired', retired_at = now() WHERE kid = v_active.kid;
  UPDATE coordination.intent_signing_keys SET state = 'active', activated_at = now() WHERE kid = v_pending.kid;
  RETURN v_pending.kid;
END $$;

REVOKE EXECUTE ON FUNCTION coordination.published_intent_keys() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION coordination.active_intent_key() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION coordination.offer_intent_key(text, jsonb, jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION coordination.rotate_intent_key(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.published_intent_keys() TO :app_role;
GRANT EXECUTE ON FUNCTION coordination.active_intent_key() TO :app_role;
GRANT EXECUTE ON FUNCTION coordination.offer_intent_key(text, jsonb, jsonb) TO :app_role;
GRANT EXECUTE ON FUNCTION coordination.rotate_intent_key(int) TO :app_role;

-- Per-device intent counter: createIntent increments it under the row lock, so a device's intents are numbered
-- 1, 2, 3… without gaps and commit in sequence order (the device stream relies on it, as rooms do).
CREATE TABLE coordination.device_intent_seqs (
  tenant_id uuid NOT NULL,
  device_id uuid NOT NULL,
  last_seq int NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
  PRIMARY KEY (tenant_id, device_id)
);
ALTER TABLE coordination.device_intent_seqs ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.device_intent_seqs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.device_intent_seqs
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON coordination.device_intent_seqs TO :app_role;
GRANT UPDATE (last_seq) ON coordination.device_intent_seqs TO :app_role;

CREATE TABLE coordination.intents (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  device_id uuid NOT NULL,
  seq int NOT NULL CHECK (seq >= 1),
  requester text NOT NULL,
  action text NOT NULL CHECK (char_length(action) BETWEEN 1 AND 100),
  params jsonb NOT NULL CHECK (jsonb_typeof(params) = 'object'),
  state text NOT NULL DEFAULT 'QUEUED' CHECK (state IN ('QUEUED', 'DELIVERED', 'LOCALLY_APPROVED',
    'DENIED_BY_POLICY', 'EXECUTING', 'COMPLETED', 'FAILED', 'CANCELLED', 'EXPIRED', 'OUTCOME_UNKNOWN')),
  -- Number of state changes recorded so far (intent_events.n of the newest); the web stream resumes on it.
  version int NOT NULL DEFAULT 1 CHECK (version >= 1),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL CHECK (expires_at > created_at),
  execution_timeout_seconds int NOT NULL CHECK (execution_timeout_seconds BETWEEN 10 AND 86400),
  -- Set when the intent enters EXECUTING: past it the server records OUTCOME_UNKNOWN.
  execution_deadline timestamptz,
  jws text NOT NULL,
  PRIMARY KEY (id),
  UNIQUE (tenant_id, id),
  UNIQUE (tenant_id, device_id, seq),
  FOREIGN KEY (tenant_id, device_id) REFERENCES coordination.device_intent_seqs (tenant_id, device_id)
);
-- The sweeper's scans: open intents by expiry, executing ones by deadline.
CREATE INDEX intents_open_expiry ON coordination.intents (expires_at)
  WHERE state IN ('QUEUED', 'DELIVERED', 'LOCALLY_APPROVED');
CREATE INDEX intents_executing_deadline ON coordination.intents (execution_deadline) WHERE state = 'EXECUTING';
ALTER TABLE coordination.intents ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.intents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.intents
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON coordination.intents TO :app_role;
GRANT UPDATE (state, version, execution_deadline) ON coordination.intents TO :app_role;

-- Every state change, append-only: n = 1 is the creation (QUEUED), then one row per transition.
CREATE TABLE coordination.intent_events (
  tenant_id uuid NOT NULL,
  intent_id uuid NOT NULL,
  n int NOT NULL CHECK (n >= 1),
  state text NOT NULL,
  at timestamptz NOT NULL,
  -- Who: a principal id, 'device:<id>' for a device report, or 'system' (sweeper).
  actor text NOT NULL,
  reason text CHECK (reason IS NULL OR char_length(reason) <= 500),
  PRIMARY KEY (tenant_id, intent_id, n),
  FOREIGN KEY (tenant_id, intent_id) REFERENCES coordination.intents (tenant_id, id)
);
ALTER TABLE coordination.intent_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.intent_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.intent_events
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
REVOKE ALL ON coordination.intent_events FROM :app_role;
GRANT SELECT, INSERT ON coordination.intent_events TO :app_role;

-- Transactional outbox: one row per change, written with it; NOTIFY carries only its keys. Relays to other
-- transports (NATS…) can read it in order of id; nothing deletes from it yet.
CREATE TABLE coordination.intent_outbox (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  intent_id uuid NOT NULL,
  device_id uuid NOT NULL,
  n int NOT NULL,
  state text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (id),
  FOREIGN KEY (tenant_id, intent_id, n) REFERENCES coordination.intent_events (tenant_id, intent_id, n)
);
ALTER TABLE coordination.intent_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.intent_outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.intent_outbox
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
REVOKE ALL ON coordination.intent_outbox FROM :app_role;
GRANT SELECT, INSERT ON coordination.intent_outbox TO :app_role;

-- Device reports seen (jti), so a replayed report is refused; kept at least as long as the report could verify.
CREATE TABLE coordination.intent_report_jtis (
  tenant_id uuid NOT NULL,
  device_id uuid NOT NULL,
  jti text NOT NULL CHECK (char_length(jti) BETWEEN 1 AND 200),
  seen_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, device_id, jti)
);
ALTER TABLE coordination.intent_report_jtis ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.intent_report_jtis FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.intent_report_jtis
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON coordination.intent_report_jtis TO :app_role;

-- The sweeper works across tenants but writes each change in that tenant's transaction (RLS): this lists what is
-- due without exposing anything else. Needs an owner that bypasses RLS (as identity's definer functions do).
CREATE FUNCTION coordination.due_intents(p_now timestamptz, p_limit int)
  RETURNS TABLE (tenant_id uuid, id uuid, state text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'coordination.due_intents runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  RETURN QUERY
    (SELECT i.tenant_id, i.id, i.state FROM coordination.intents i
      WHERE i.state IN ('QUEUED', 'DELIVERED', 'LOCALLY_APPROVED') AND i.expires_at <= p_now
      ORDER BY i.expires_at LIMIT p_limit)
    UNION ALL
    (SELECT i.tenant_id, i.id, i.state FROM coordination.intents i
      WHERE i.state = 'EXECUTING' AND i.execution_deadline <= p_now
      ORDER BY i.execution_deadline LIMIT p_limit);
END $$;
REVOKE EXECUTE ON FUNCTION coordination.due_intents(timestamptz, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.due_intents(timestamptz, int) TO :app_role;
