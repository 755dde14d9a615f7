-- The tenants' private signing keys (TUF roles, analyzer) are stored encrypted (envelope encryption with a key from
-- the environment, never the database: runtime/src/key-encryption.ts), as the JSON text of a sealed value. New rows
-- must hold a sealed key; rows stored before this migration are sealed by the catalog when it starts
-- (signing_keys_to_seal + reseal_signing_key), and so are keys sealed under a key-encryption key that is no longer
-- the active one (KEK rotation).

-- NOT VALID: enforced for every row written from now on; rows written earlier are sealed by the catalog at start.
-- (CASE: a PEM is not JSON, so only text that starts like a JSON object is parsed.)
ALTER TABLE catalog.signing_keys
  ADD CONSTRAINT signing_keys_private_sealed CHECK (
    CASE WHEN left(private_key, 1) = '{' THEN private_key::jsonb ? 'sealed' ELSE false END
  ) NOT VALID;

-- Private keys, of every tenant, not sealed under the key-encryption key p_kek (a pass at start crosses tenants).
CREATE FUNCTION catalog.signing_keys_to_seal(p_kek text, p_limit int)
  RETURNS TABLE (tenant_id uuid, key_id text, private_key text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = catalog, pg_temp AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'catalog.signing_keys_to_seal runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  RETURN QUERY
    SELECT k.tenant_id, k.key_id, k.private_key FROM catalog.signing_keys k
     WHERE CASE WHEN left(k.private_key, 1) = '{' THEN (k.private_key::jsonb->>'kek') IS DISTINCT FROM p_kek
                ELSE true END
     ORDER BY k.tenant_id, k.key_id LIMIT p_limit;
END $$;

-- Replaces a key's private half by its sealed form, if it is still p_old (replicas starting together: one wins).
CREATE FUNCTION catalog.reseal_signing_key(p_tenant uuid, p_key_id text, p_old text, p_new text)
  RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = catalog, pg_temp AS $$
BEGIN
  UPDATE catalog.signing_keys SET private_key = p_new
   WHERE tenant_id = p_tenant AND key_id = p_key_id AND private_key = p_old;
  RETURN FOUND;
END $$;

REVOKE ALL ON FUNCTION catalog.signing_keys_to_seal(text, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION catalog.reseal_signing_key(uuid, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION catalog.signing_keys_to_seal(text, int) TO :catalog_role;
GRANT EXECUTE ON FUNCTION catalog.reseal_signing_key(uuid, text, text, text) TO :catalog_role;
