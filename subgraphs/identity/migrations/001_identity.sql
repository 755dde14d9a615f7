-- Identity: tenants, users, memberships (roles), devices, and the access-token signing keys.
--
-- Tenant data (tenants, memberships, devices) is confined by Row-Level Security to runtime.current_tenant(),
-- ENABLEd and FORCEd. Users are global identities, visible to the app role only through a membership in the
-- current tenant or as the caller themself. The app role (:app_role) cannot create tenants, users or
-- memberships and cannot touch signing keys at all: those go through the SECURITY DEFINER functions at the end
-- of this file (fixed search_path, narrow inputs and outputs), so no app query ever runs with RLS bypassed.
-- The definer functions run as the migration owner and work across tenants (bootstrap, sign-in by e-mail, "is
-- there a tenant yet"), so that role must be a superuser or have BYPASSRLS (as runtime's purge function needs);
-- they refuse with a hint otherwise (identity.require_rls_bypass).
CREATE SCHEMA IF NOT EXISTS identity;
GRANT USAGE ON SCHEMA identity TO :app_role;

CREATE TABLE identity.tenants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE identity.tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity.tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON identity.tenants
  USING (id = runtime.current_tenant()) WITH CHECK (id = runtime.current_tenant());
GRANT SELECT ON identity.tenants TO :app_role;

-- E-mail is stored lower-case (the check keeps it so), which makes the plain UNIQUE constraint case-insensitive.
CREATE TABLE identity.users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email text NOT NULL UNIQUE CHECK (email = lower(email) AND char_length(email) BETWEEN 3 AND 254),
  display_name text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 100),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE identity.memberships (
  tenant_id uuid NOT NULL REFERENCES identity.tenants (id),
  user_id uuid NOT NULL REFERENCES identity.users (id),
  role text NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'OPERATOR', 'VIEWER')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, user_id)
);
-- Keyset order of Tenant.members.
CREATE INDEX memberships_page ON identity.memberships (tenant_id, created_at, user_id);
CREATE INDEX memberships_user ON identity.memberships (user_id);
ALTER TABLE identity.memberships ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity.memberships FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON identity.memberships
  USING (tenant_id = runtime.current_tenant()) WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT ON identity.memberships TO :app_role;

ALTER TABLE identity.users ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity.users FORCE ROW LEVEL SECURITY;
-- The subquery on memberships is itself confined to the current tenant by that table's policy.
CREATE POLICY visible_in_tenant ON identity.users FOR SELECT
  USING (
    id::text = runtime.current_principal()
    OR EXISTS (
      SELECT 1 FROM identity.memberships m
       WHERE m.user_id = users.id AND m.tenant_id = runtime.current_tenant()
    )
  );
CREATE POLICY self_update ON identity.users FOR UPDATE
  USING (id::text = runtime.current_principal()) WITH CHECK (id::text = runtime.current_principal());
GRANT SELECT ON identity.users TO :app_role;
GRANT UPDATE (display_name) ON identity.users TO :app_role;

-- A device belongs to a tenant and to a member of that tenant (the composite key enforces both).
CREATE TABLE identity.devices (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL REFERENCES identity.tenants (id),
  owner_id uuid NOT NULL,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  platform text NOT NULL CHECK (platform IN ('windows', 'macos', 'linux')),
  status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'ENROLLED', 'REVOKED')),
  remote_actions_enabled boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, owner_id) REFERENCES identity.memberships (tenant_id, user_id)
);
-- Keyset order of Tenant.devices.
CREATE INDEX devices_page ON identity.devices (tenant_id, created_at, id);
ALTER TABLE identity.devices ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity.devices FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON identity.devices
  USING (tenant_id = runtime.current_tenant()) WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT ON identity.devices TO :app_role;
GRANT INSERT (tenant_id, owner_id, name, platform) ON identity.devices TO :app_role;

-- Access-token signing keys. Not tenant data and never readable by the app role directly: JWKS and signing go
-- through the functions below. kid is the RFC 7638 thumbprint of the public key. A retired key stays published
-- for a while so tokens signed just before retirement still verify.
CREATE TABLE identity.signing_keys (
  kid text PRIMARY KEY,
  alg text NOT NULL DEFAULT 'ES256' CHECK (alg = 'ES256'),
  public_jwk jsonb NOT NULL,
  private_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);
-- At most one active key at a time.
CREATE UNIQUE INDEX signing_keys_one_active ON identity.signing_keys ((true)) WHERE retired_at IS NULL;
REVOKE ALL ON identity.signing_keys FROM PUBLIC;

-- The definer functions below that work across tenants call this first: under FORCE ROW LEVEL SECURITY an owner
-- without BYPASSRLS would silently see no rows (or fail on the policies), so say what to do instead.
CREATE FUNCTION identity.require_rls_bypass() RETURNS boolean
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'identity''s bootstrap and sign-in functions run as their owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or run migrations as a role that has it).', current_user);
  END IF;
  RETURN true;
END $$;

-- Public halves of the keys a verifier may meet: the active one and those retired in the last hour
-- (access tokens live 15 minutes).
CREATE FUNCTION identity.published_signing_keys()
  RETURNS TABLE (kid text, alg text, public_jwk jsonb)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT k.kid, k.alg, k.public_jwk FROM identity.signing_keys k
     WHERE k.retired_at IS NULL OR k.retired_at > now() - interval '1 hour'
     ORDER BY k.created_at DESC, k.kid
$$;

-- The key new tokens are signed with (private half: only the token issuer calls this).
CREATE FUNCTION identity.active_signing_key()
  RETURNS TABLE (kid text, alg text, private_jwk jsonb)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT k.kid, k.alg, k.private_jwk FROM identity.signing_keys k WHERE k.retired_at IS NULL
$$;

-- Stores the given key unless an active one exists; returns the active key either way (replicas starting
-- together agree on one key).
CREATE FUNCTION identity.ensure_signing_key(p_kid text, p_public_jwk jsonb, p_private_jwk jsonb)
  RETURNS TABLE (kid text, alg text, private_jwk jsonb, created boolean)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
BEGIN
  IF p_public_jwk ? 'd' THEN
    RAISE EXCEPTION 'public_jwk must not contain the private key';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('identity.signing_keys', 0));
  RETURN QUERY SELECT k.kid, k.alg, k.private_jwk, false FROM identity.signing_keys k WHERE k.retired_at IS NULL;
  IF FOUND THEN
    RETURN;
  END IF;
  INSERT INTO identity.signing_keys (kid, alg, public_jwk, private_jwk)
    VALUES (p_kid, 'ES256', p_public_jwk, p_private_jwk);
  RETURN QUERY SELECT p_kid, 'ES256'::text, p_private_jwk, true;
END $$;

-- Creates tenant + user + OWNER membership in one statement. Idempotent per (e-mail, tenant name): when the
-- user already owns a tenant of that name, returns it with created = false. An existing user keeps their
-- display name.
CREATE FUNCTION identity.bootstrap_tenant(p_tenant_name text, p_email text, p_display_name text)
  RETURNS TABLE (tenant_id uuid, user_id uuid, created boolean)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
DECLARE
  v_email text := lower(btrim(p_email));
  v_user uuid;
  v_tenant uuid;
BEGIN
  PERFORM identity.require_rls_bypass();
  PERFORM pg_advisory_xact_lock(hashtextextended('identity.bootstrap:' || v_email, 0));
  SELECT u.id INTO v_user FROM identity.users u WHERE u.email = v_email;
  IF v_user IS NOT NULL THEN
    SELECT t.id INTO v_tenant
      FROM identity.tenants t JOIN identity.memberships m ON m.tenant_id = t.id
     WHERE m.user_id = v_user AND m.role = 'OWNER' AND t.name = p_tenant_name
     ORDER BY t.created_at, t.id
     LIMIT 1;
    IF v_tenant IS NOT NULL THEN
      RETURN QUERY SELECT v_tenant, v_user, false;
      RETURN;
    END IF;
  ELSE
    INSERT INTO identity.users (email, display_name) VALUES (v_email, p_display_name) RETURNING id INTO v_user;
  END IF;
  INSERT INTO identity.tenants (name) VALUES (p_tenant_name) RETURNING id INTO v_tenant;
  INSERT INTO identity.memberships (tenant_id, user_id, role) VALUES (v_tenant, v_user, 'OWNER');
  RETURN QUERY SELECT v_tenant, v_user, true;
END $$;

-- The caller's role in a tenant (null when not a member): lets the token issuer check a membership without
-- entering the tenant.
CREATE FUNCTION identity.membership_of(p_user uuid, p_tenant uuid)
  RETURNS text
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT identity.require_rls_bypass();
    SELECT m.role FROM identity.memberships m WHERE m.user_id = p_user AND m.tenant_id = p_tenant
$$;

-- Memberships of the user with this e-mail (sign-in picks the tenant). Oldest first.
CREATE FUNCTION identity.memberships_by_email(p_email text)
  RETURNS TABLE (tenant_id uuid, user_id uuid, role text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT identity.require_rls_bypass();
    SELECT m.tenant_id, m.user_id, m.role
      FROM identity.users u JOIN identity.memberships m ON m.user_id = u.id
     WHERE u.email = lower(btrim(p_email))
     ORDER BY m.created_at, m.tenant_id
$$;

-- Whether any tenant exists yet (first start of a development install).
CREATE FUNCTION identity.has_tenants()
  RETURNS boolean
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT identity.require_rls_bypass();
    SELECT EXISTS (SELECT 1 FROM identity.tenants)
$$;

REVOKE ALL ON FUNCTION identity.require_rls_bypass() FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.published_signing_keys() FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.active_signing_key() FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.ensure_signing_key(text, jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.bootstrap_tenant(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.membership_of(uuid, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.memberships_by_email(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.has_tenants() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.published_signing_keys() TO :app_role;
GRANT EXECUTE ON FUNCTION identity.active_signing_key() TO :app_role;
GRANT EXECUTE ON FUNCTION identity.ensure_signing_key(text, jsonb, jsonb) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.bootstrap_tenant(text, text, text) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.membership_of(uuid, uuid) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.memberships_by_email(text) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.has_tenants() TO :app_role;
