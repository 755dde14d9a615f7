-- Least privilege: one database role per service (runtime/src/db/service-roles.ts). Until now every service ran as
-- the one app role, which could therefore call every other service's SECURITY DEFINER functions (identity's private
-- signing keys and password hashes among them). From here on each subgraph namespace moves its schema's grants from
-- the app role to its own role (`SELECT runtime.move_grants(...)` in its `service_role` migration); the app role keeps
-- what every subgraph shares: this schema's tenancy functions, idempotency keys and reading the revocation list.

-- Moves every privilege `p_from` holds directly on schema `p_schema` and on what is in it (tables, views, sequences,
-- their columns, functions and procedures) to `p_to`. For the migrating role only (no grant to anyone).
CREATE FUNCTION runtime.move_grants(p_schema name, p_from name, p_to name) RETURNS int
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  from_oid oid := (SELECT oid FROM pg_roles WHERE rolname = p_from);
  n int := 0;
  r record;
BEGIN
  IF from_oid IS NULL OR NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_to) THEN
    RAISE EXCEPTION 'move_grants: unknown role % or %', p_from, p_to;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_namespace ns, aclexplode(ns.nspacl) a
              WHERE ns.nspname = p_schema AND a.grantee = from_oid) THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', p_schema, p_to);
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM %I', p_schema, p_from);
    n := n + 1;
  END IF;
  FOR r IN
    SELECT c.oid::regclass AS rel, a.privilege_type AS priv
      FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace, aclexplode(c.relacl) a
     WHERE ns.nspname = p_schema AND a.grantee = from_oid
  LOOP
    EXECUTE format('GRANT %s ON %s TO %I', r.priv, r.rel, p_to);
    EXECUTE format('REVOKE %s ON %s FROM %I', r.priv, r.rel, p_from);
    n := n + 1;
  END LOOP;
  FOR r IN
    SELECT c.oid::regclass AS rel, att.attname AS col, a.privilege_type AS priv
      FROM pg_attribute att
      JOIN pg_class c ON c.oid = att.attrelid
      JOIN pg_namespace ns ON ns.oid = c.relnamespace, aclexplode(att.attacl) a
     WHERE ns.nspname = p_schema AND a.grantee = from_oid AND NOT att.attisdropped
  LOOP
    EXECUTE format('GRANT %s (%I) ON %s TO %I', r.priv, r.col, r.rel, p_to);
    EXECUTE format('REVOKE %s (%I) ON %s FROM %I', r.priv, r.col, r.rel, p_from);
    n := n + 1;
  END LOOP;
  FOR r IN
    SELECT p.oid::regprocedure AS fn, p.prokind AS kind
      FROM pg_proc p JOIN pg_namespace ns ON ns.oid = p.pronamespace, aclexplode(p.proacl) a
     WHERE ns.nspname = p_schema AND a.grantee = from_oid AND a.privilege_type = 'EXECUTE'
  LOOP
    EXECUTE format('GRANT EXECUTE ON %s %s TO %I', CASE r.kind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END, r.fn, p_to);
    EXECUTE format('REVOKE EXECUTE ON %s %s FROM %I', CASE r.kind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END, r.fn, p_from);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
REVOKE ALL ON FUNCTION runtime.move_grants(name, name, name) FROM PUBLIC;

-- Only identity revokes tokens; every subgraph reads the list (through the app role), and so does the gateway.
REVOKE INSERT, UPDATE, DELETE ON runtime.token_revocations FROM :app_role;
GRANT SELECT, INSERT, UPDATE, DELETE ON runtime.token_revocations TO :identity_role;
GRANT USAGE ON SCHEMA runtime TO :gateway_role;
GRANT SELECT ON runtime.token_revocations TO :gateway_role;
