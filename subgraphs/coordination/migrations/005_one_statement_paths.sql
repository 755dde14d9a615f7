-- Coordination, issue 4 (throughput): hot paths in one round trip instead of three. take_tokens() (003) and the
-- device stream's read run as the caller under RLS, so they needed the tenant's transaction: BEGIN + settings, the
-- statement, COMMIT. These wrappers set the same transaction-local settings themselves, so one statement outside
-- any transaction (its own implicit transaction) does the same work. They grant nothing new: they run as the caller
-- (SECURITY INVOKER), RLS still applies, and the app role could always set app.tenant_id for its own transactions
-- (that is how every tenant transaction starts). Call them only outside a transaction: inside one they would
-- overwrite its settings.

-- The rate limiter's token take (coordination.take_tokens) for one tenant and principal.
CREATE FUNCTION coordination.take_tokens_as(p_tenant uuid, p_principal text, p_buckets text[],
                                            p_capacity double precision[], p_rate double precision[],
                                            p_cost double precision, p_now timestamptz)
  RETURNS bigint
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant::text, true), set_config('app.principal_id', p_principal, true);
  RETURN coordination.take_tokens(p_tenant, p_buckets, p_capacity, p_rate, p_cost, p_now);
END $$;
REVOKE EXECUTE ON FUNCTION coordination.take_tokens_as(uuid, text, text[], double precision[], double precision[],
  double precision, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.take_tokens_as(uuid, text, text[], double precision[], double precision[],
  double precision, timestamptz) TO :app_role;

-- A device's intents with seq > p_after in seq order, at most p_limit, as the tenant sees them (the device stream's
-- read, once per notification).
CREATE FUNCTION coordination.device_intents_as(p_tenant uuid, p_principal text, p_device uuid, p_after int,
                                               p_limit int)
  RETURNS SETOF coordination.intents
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant::text, true), set_config('app.principal_id', p_principal, true);
  RETURN QUERY SELECT i.* FROM coordination.intents i
                WHERE i.device_id = p_device AND i.seq > p_after ORDER BY i.seq LIMIT p_limit;
END $$;
REVOKE EXECUTE ON FUNCTION coordination.device_intents_as(uuid, text, uuid, int, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.device_intents_as(uuid, text, uuid, int, int) TO :app_role;
