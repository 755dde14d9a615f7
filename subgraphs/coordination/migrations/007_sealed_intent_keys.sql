-- Private intent signing keys are stored encrypted (envelope encryption with a key from the environment, never the
-- database: runtime/src/key-encryption.ts). New private halves must be sealed; keys stored before this migration
-- are sealed by coordination when it starts (intent_keys_to_seal + reseal_intent_key), and so are keys sealed under
-- a key-encryption key that is no longer the active one (KEK rotation).

-- NOT VALID: enforced for every row written from now on; rows written earlier are sealed by coordination at start.
ALTER TABLE coordination.intent_signing_keys
  ADD CONSTRAINT intent_signing_keys_private_sealed CHECK (private_jwk ? 'sealed' AND NOT private_jwk ? 'd') NOT VALID;

-- Private halves not sealed under the key-encryption key p_kek (plain ones from before, or an older KEK's).
CREATE FUNCTION coordination.intent_keys_to_seal(p_kek text)
  RETURNS TABLE (kid text, private_jwk jsonb)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
    SELECT k.kid, k.private_jwk FROM coordination.intent_signing_keys k WHERE k.private_jwk->>'kek' IS DISTINCT FROM p_kek
$$;

-- Replaces a key's private half by its sealed form, if it is still p_old (replicas starting together: one wins).
CREATE FUNCTION coordination.reseal_intent_key(p_kid text, p_old jsonb, p_new jsonb)
  RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
BEGIN
  UPDATE coordination.intent_signing_keys SET private_jwk = p_new WHERE kid = p_kid AND private_jwk = p_old;
  RETURN FOUND;
END $$;

REVOKE ALL ON FUNCTION coordination.intent_keys_to_seal(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION coordination.reseal_intent_key(text, jsonb, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.intent_keys_to_seal(text) TO :coordination_role;
GRANT EXECUTE ON FUNCTION coordination.reseal_intent_key(text, jsonb, jsonb) TO :coordination_role;
