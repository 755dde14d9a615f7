-- Signing-key rotation without a verifier ever meeting an unknown kid, and RFC 8628 polling state.
--
-- A *pending* key is published in the JWKS before it signs anything, so every verifier's cached key set already
-- holds it when rotation promotes it to active; the previous active key is retired and stays published for an hour
-- (access tokens live 15 minutes). The pending key lives in its own table so the one-active-key index of
-- signing_keys keeps its meaning.
CREATE TABLE identity.pending_signing_keys (
  kid text PRIMARY KEY,
  alg text NOT NULL DEFAULT 'ES256' CHECK (alg = 'ES256'),
  public_jwk jsonb NOT NULL,
  private_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX pending_signing_keys_one ON identity.pending_signing_keys ((true));
REVOKE ALL ON identity.pending_signing_keys FROM PUBLIC;

-- Every key the issuer may hold (private halves): the active one first, then pending, then recently retired.
-- Only identity's OAuth provider calls this (its keystore signs ID tokens and, by kid, access tokens).
CREATE FUNCTION identity.issuer_signing_keys()
  RETURNS TABLE (kid text, alg text, private_jwk jsonb, state text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT kid, alg, private_jwk, state FROM (
      SELECT k.kid, k.alg, k.private_jwk, 'active' AS state, 0 AS ord, k.created_at
        FROM identity.signing_keys k WHERE k.retired_at IS NULL
      UNION ALL
      SELECT p.kid, p.alg, p.private_jwk, 'pending', 1, p.created_at FROM identity.pending_signing_keys p
      UNION ALL
      SELECT k.kid, k.alg, k.private_jwk, 'retired', 2, k.created_at
        FROM identity.signing_keys k WHERE k.retired_at > now() - interval '1 hour'
    ) keys ORDER BY ord, created_at DESC, kid
$$;

-- The JWKS: the active key, the pending one and those retired in the last hour.
CREATE OR REPLACE FUNCTION identity.published_signing_keys()
  RETURNS TABLE (kid text, alg text, public_jwk jsonb)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT kid, alg, public_jwk FROM (
      SELECT k.kid, k.alg, k.public_jwk, 0 AS ord, k.created_at FROM identity.signing_keys k
       WHERE k.retired_at IS NULL OR k.retired_at > now() - interval '1 hour'
      UNION ALL
      SELECT p.kid, p.alg, p.public_jwk, 1, p.created_at FROM identity.pending_signing_keys p
    ) keys ORDER BY ord, created_at DESC, kid
$$;

-- Stores the given key as the pending one unless one exists. Returns whether it was stored.
CREATE FUNCTION identity.ensure_pending_signing_key(p_kid text, p_public_jwk jsonb, p_private_jwk jsonb)
  RETURNS boolean
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
BEGIN
  IF p_public_jwk ? 'd' THEN
    RAISE EXCEPTION 'public_jwk must not contain the private key';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('identity.signing_keys', 0));
  IF EXISTS (SELECT 1 FROM identity.pending_signing_keys) THEN
    RETURN false;
  END IF;
  INSERT INTO identity.pending_signing_keys (kid, public_jwk, private_jwk) VALUES (p_kid, p_public_jwk, p_private_jwk);
  RETURN true;
END $$;

-- Rotation: the pending key becomes active, the active one is retired (published one more hour), and the given key
-- becomes the new pending one. Without a pending key the given key becomes active directly. Only rotates when the
-- active key is at least p_min_age old (so replicas running the scheduled rotation together rotate once). Returns
-- the new active kid, or NULL when nothing was rotated.
CREATE FUNCTION identity.rotate_signing_key(p_kid text, p_public_jwk jsonb, p_private_jwk jsonb,
                                            p_min_age interval DEFAULT interval '0')
  RETURNS text
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = identity, pg_temp AS $$
DECLARE
  v_pending identity.pending_signing_keys;
BEGIN
  IF p_public_jwk ? 'd' THEN
    RAISE EXCEPTION 'public_jwk must not contain the private key';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('identity.signing_keys', 0));
  IF EXISTS (SELECT 1 FROM identity.signing_keys WHERE retired_at IS NULL AND created_at > now() - p_min_age) THEN
    RETURN NULL;
  END IF;
  UPDATE identity.signing_keys SET retired_at = now() WHERE retired_at IS NULL;
  DELETE FROM identity.pending_signing_keys RETURNING * INTO v_pending;
  IF v_pending.kid IS NULL THEN
    INSERT INTO identity.signing_keys (kid, public_jwk, private_jwk) VALUES (p_kid, p_public_jwk, p_private_jwk);
    RETURN p_kid;
  END IF;
  INSERT INTO identity.signing_keys (kid, alg, public_jwk, private_jwk)
    VALUES (v_pending.kid, v_pending.alg, v_pending.public_jwk, v_pending.private_jwk);
  INSERT INTO identity.pending_signing_keys (kid, public_jwk, private_jwk) VALUES (p_kid, p_public_jwk, p_private_jwk);
  RETURN v_pending.kid;
END $$;

REVOKE ALL ON FUNCTION identity.issuer_signing_keys() FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.ensure_pending_signing_key(text, jsonb, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.rotate_signing_key(text, jsonb, jsonb, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.issuer_signing_keys() TO :app_role;
GRANT EXECUTE ON FUNCTION identity.ensure_pending_signing_key(text, jsonb, jsonb) TO :app_role;
GRANT EXECUTE ON FUNCTION identity.rotate_signing_key(text, jsonb, jsonb, interval) TO :app_role;

-- RFC 8628 §3.5: a device polling faster than its interval gets slow_down, and its interval grows by 5 s for this
-- and every later request. Keyed by SHA-256 of the device code.
CREATE TABLE identity.device_polls (
  code_hash bytea PRIMARY KEY,
  interval_seconds int NOT NULL CHECK (interval_seconds BETWEEN 1 AND 3600),
  last_poll_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX device_polls_expires ON identity.device_polls (expires_at);
GRANT SELECT, INSERT, UPDATE, DELETE ON identity.device_polls TO :app_role;
