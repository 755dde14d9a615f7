-- Users sign in: scrypt password hashes, disabled users, the failed-attempt limiter and web sessions (issue 3).
--
-- The app role never reads a password hash with a query of its own: SELECT on identity.users becomes column-wise
-- (every column but password_hash), and sign-in reads the hash through identity.user_for_sign_in, a SECURITY
-- DEFINER function that answers for one e-mail. Setting a password and creating users or memberships from the admin
-- CLI go through definer functions granted to nobody but their owner (the role that runs migrations, which is the
-- role the CLI connects as). Web sessions carry a tenant, so that table has Row-Level Security like every tenant
-- table; the app reaches it only through the three session functions below (a session is looked up before any
-- tenant is known).
ALTER TABLE identity.users ADD COLUMN password_hash text
  CHECK (password_hash IS NULL OR password_hash LIKE 'scrypt$%');
ALTER TABLE identity.users ADD COLUMN disabled_at timestamptz;

REVOKE SELECT ON identity.users FROM :app_role;
GRANT SELECT (id, email, display_name, created_at, disabled_at) ON identity.users TO :app_role;

-- Failed attempts per key (sign-in per e-mail and per client address, device user codes): see
-- src/attempt-limiter.ts. Not tenant data (a key names an e-mail address or a network address, never a secret).
CREATE TABLE identity.auth_attempts (
  key text PRIMARY KEY CHECK (char_length(key) BETWEEN 1 AND 400),
  failures int NOT NULL CHECK (failures >= 0),
  window_started_at timestamptz NOT NULL,
  locked_until timestamptz
);
GRANT SELECT, INSERT, UPDATE, DELETE ON identity.auth_attempts TO :app_role;

-- A signed-in browser: the cookie holds a random 32-byte id, this table only its SHA-256. The membership key
-- cascades, so removing a member ends their sessions in that tenant.
CREATE TABLE identity.web_sessions (
  id_hash bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),
  user_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  csrf_secret bytea NOT NULL CHECK (octet_length(csrf_secret) = 32),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  FOREIGN KEY (tenant_id, user_id) REFERENCES identity.memberships (tenant_id, user_id) ON DELETE CASCADE
);
CREATE INDEX web_sessions_expires ON identity.web_sessions (expires_at);
CREATE INDEX web_sessions_member ON identity.web_sessions (tenant_id, user_id);
ALTER TABLE identity.web_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity.web_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON identity.web_sessions
  USING (tenant_id = runtime.current_tenant()) WITH CHECK (tenant_id = runtime.current_tenant());
-- No grant to the app role: the functions below are its only way in.

-- Sign-in: the user with this e-mail (no row when there is none). The hash leaves the database only here.
CREATE FUNCTION identity.user_for_sign_in(p_email text)
  RETURNS TABLE (id uuid, email text, display_name text, password_hash text, disabled boolean)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT identity.require_rls_bypass();
    SELECT u.id, u.email, u.display_name, u.password_hash, u.disabled_at IS NOT NULL
      FROM identity.users u WHERE u.email = lower(btrim(p_email))
$$;

-- The tenants a signed-in user may pick (their memberships with tenant names), oldest first.
CREATE FUNCTION identity.sign_in_memberships(p_user uuid)
  RETURNS TABLE (tenant_id uuid, tenant_name text, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT identity.require_rls_bypass();
    SELECT m.tenant_id, t.name, m.role
      FROM identity.memberships m JOIN identity.tenants t ON t.id = m.tenant_id
     WHERE m.user_id = p_user
     ORDER BY m.created_at, m.tenant_id
$$;

-- Sign-in with weaker scrypt parameters than today's rehashes the password: only while the old hash is current.
CREATE FUNCTION identity.upgrade_password_hash(p_user uuid, p_old_hash text, p_new_hash text)
  RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
BEGIN
  PERFORM identity.require_rls_bypass();
  UPDATE identity.users SET password_hash = p_new_hash WHERE id = p_user AND password_hash = p_old_hash;
  RETURN FOUND;
END $$;

-- Development mode gives dev@localhost a random password on first start; never overwrites one.
CREATE FUNCTION identity.set_development_password(p_hash text)
  RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
BEGIN
  PERFORM identity.require_rls_bypass();
  UPDATE identity.users SET password_hash = p_hash WHERE email = 'dev@localhost' AND password_hash IS NULL;
  RETURN FOUND;
END $$;

-- Admin CLI: set (or replace) a user's password and end their web sessions; returns the user id (null when there
-- is no such user). With p_only_if_none, leaves an existing password alone (and returns null for that user too).
CREATE FUNCTION identity.set_user_password(p_email text, p_hash text, p_only_if_none boolean)
  RETURNS uuid
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
DECLARE
  v_user uuid;
BEGIN
  PERFORM identity.require_rls_bypass();
  UPDATE identity.users u SET password_hash = p_hash
   WHERE u.email = lower(btrim(p_email)) AND (NOT p_only_if_none OR u.password_hash IS NULL)
  RETURNING u.id INTO v_user;
  IF v_user IS NOT NULL THEN
    DELETE FROM identity.web_sessions s WHERE s.user_id = v_user;
  END IF;
  RETURN v_user;
END $$;

-- Admin CLI: a user without any membership yet (idempotent per e-mail: an existing user keeps their name).
CREATE FUNCTION identity.create_user(p_email text, p_display_name text)
  RETURNS TABLE (user_id uuid, created boolean)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
DECLARE
  v_email text := lower(btrim(p_email));
BEGIN
  PERFORM identity.require_rls_bypass();
  RETURN QUERY
    INSERT INTO identity.users (email, display_name) VALUES (v_email, p_display_name)
    ON CONFLICT (email) DO NOTHING
    RETURNING identity.users.id, true;
  IF NOT FOUND THEN
    RETURN QUERY SELECT u.id, false FROM identity.users u WHERE u.email = v_email;
  END IF;
END $$;

-- Admin CLI: make an existing user a member of a tenant with a role, or change their role. Returns the previous
-- role (null when the membership is new). Refuses to demote the tenant's last owner.
CREATE FUNCTION identity.admin_set_membership(p_tenant uuid, p_email text, p_role text)
  RETURNS TABLE (user_id uuid, previous_role text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
DECLARE
  v_user uuid;
  v_previous text;
BEGIN
  PERFORM identity.require_rls_bypass();
  IF NOT EXISTS (SELECT 1 FROM identity.tenants t WHERE t.id = p_tenant) THEN
    RAISE EXCEPTION 'no tenant with id %', p_tenant USING ERRCODE = 'no_data_found',
      HINT = 'Check --tenant-id (bootstrap printed it as tenantId).';
  END IF;
  SELECT u.id INTO v_user FROM identity.users u WHERE u.email = lower(btrim(p_email));
  IF v_user IS NULL THEN
    RAISE EXCEPTION 'no user with this e-mail' USING ERRCODE = 'no_data_found',
      HINT = 'Create the user first: npm run admin -- create-user --email <e-mail> --name <name>.';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('identity.membership:' || p_tenant::text, 0));
  SELECT m.role INTO v_previous FROM identity.memberships m WHERE m.tenant_id = p_tenant AND m.user_id = v_user;
  IF v_previous = 'OWNER' AND p_role <> 'OWNER' AND NOT EXISTS (
    SELECT 1 FROM identity.memberships m
     WHERE m.tenant_id = p_tenant AND m.role = 'OWNER' AND m.user_id <> v_user
  ) THEN
    RAISE EXCEPTION 'this user is the tenant''s last owner' USING ERRCODE = 'check_violation',
      HINT = 'Make another member OWNER first.';
  END IF;
  INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES (p_tenant, v_user, p_role)
    ON CONFLICT ON CONSTRAINT memberships_pkey DO UPDATE SET role = EXCLUDED.role;
  RETURN QUERY SELECT v_user, v_previous;
END $$;

-- Web sessions. Expired rows are purged whenever a session is created.
CREATE FUNCTION identity.create_web_session(
  p_id_hash bytea, p_user uuid, p_tenant uuid, p_csrf_secret bytea, p_now timestamptz, p_expires timestamptz
) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
BEGIN
  PERFORM identity.require_rls_bypass();
  DELETE FROM identity.web_sessions s WHERE s.expires_at <= p_now;
  INSERT INTO identity.web_sessions (id_hash, user_id, tenant_id, csrf_secret, created_at, expires_at)
    VALUES (p_id_hash, p_user, p_tenant, p_csrf_secret, p_now, p_expires);
END $$;

-- The live session with this id hash: not expired, its user not disabled, still a member (with the current role).
CREATE FUNCTION identity.web_session(p_id_hash bytea, p_now timestamptz)
  RETURNS TABLE (user_id uuid, tenant_id uuid, csrf_secret bytea, expires_at timestamptz, role text,
                 email text, display_name text, tenant_name text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT identity.require_rls_bypass();
    SELECT s.user_id, s.tenant_id, s.csrf_secret, s.expires_at, m.role, u.email, u.display_name, t.name
      FROM identity.web_sessions s
      JOIN identity.memberships m ON m.tenant_id = s.tenant_id AND m.user_id = s.user_id
      JOIN identity.users u ON u.id = s.user_id
      JOIN identity.tenants t ON t.id = s.tenant_id
     WHERE s.id_hash = p_id_hash AND s.expires_at > p_now AND u.disabled_at IS NULL
$$;

CREATE FUNCTION identity.delete_web_session(p_id_hash bytea)
  RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
BEGIN
  PERFORM identity.require_rls_bypass();
  DELETE FROM identity.web_sessions s WHERE s.id_hash = p_id_hash;
  RETURN FOUND;
END $$;

REVOKE ALL ON FUNCTION identity.user_for_sign_in(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.sign_in_memberships(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.upgrade_password_hash(uuid, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.set_development_password(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.set_user_password(text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.create_user(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.admin_set_membership(uuid, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.create_web_session(bytea, uuid, uuid, bytea, timestamptz, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.web_session(bytea, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.delete_web_session(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.user_for_sign_in(text) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.sign_in_memberships(uuid) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.upgrade_password_hash(uuid, text, text) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.set_development_password(text) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.create_web_session(bytea, uuid, uuid, bytea, timestamptz, timestamptz) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.web_session(bytea, timestamptz) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.delete_web_session(bytea) TO :app_role;
-- set_user_password, create_user and admin_set_membership: owner only (the admin CLI runs as the migration role).
