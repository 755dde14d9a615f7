-- Claiming an idempotency key in one round trip (runtime/src/idempotency.ts, runIdempotent): the transaction's
-- advisory lock on the key, then — a statement of its own, so a snapshot taken after the lock — the stored answer if
-- it is still live; an expired one is deleted so the key can be used again. `locked` false: another transaction holds
-- the key (nothing was read). It runs with the caller's rights, so the table's policy applies as before; the lock's
-- key text is the one the three separate statements used (tenant, principal and key, each on its own line).
CREATE FUNCTION runtime.claim_idempotency_key(p_tenant uuid, p_principal text, p_key text)
  RETURNS TABLE (locked boolean, fingerprint text, response jsonb, erased_at timestamptz)
  LANGUAGE plpgsql VOLATILE SET search_path = runtime, pg_temp AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended(p_tenant::text || E'\n' || p_principal || E'\n' || p_key, 0)) THEN
    RETURN QUERY SELECT false, NULL::text, NULL::jsonb, NULL::timestamptz;
    RETURN;
  END IF;
  DELETE FROM runtime.idempotency_keys k
   WHERE k.tenant_id = p_tenant AND k.principal_id = p_principal AND k.key = p_key AND k.expires_at <= now();
  RETURN QUERY
    SELECT true, k.fingerprint, k.response, k.erased_at FROM runtime.idempotency_keys k
     WHERE k.tenant_id = p_tenant AND k.principal_id = p_principal AND k.key = p_key;
  IF NOT FOUND THEN
    RETURN QUERY SELECT true, NULL::text, NULL::jsonb, NULL::timestamptz;
  END IF;
END $$;
REVOKE ALL ON FUNCTION runtime.claim_idempotency_key(uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION runtime.claim_idempotency_key(uuid, text, text) TO :app_role;
