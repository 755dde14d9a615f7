-- Right to be forgotten for stored idempotent responses (runtime/src/idempotency.ts, eraseIdempotentResponses).
--
-- A replayable mutation keeps its JSON answer in runtime.idempotency_keys, and answers can hold what a tenant-wide
-- erase removes (a putMemory answer holds the record). The erase tombstones those rows in its own transaction: the
-- response becomes {"erased": true, "erasedAt": ...}, the argument fingerprint (a hash of the arguments, content
-- included) becomes 'erased', and erased_at is set. The row and its key stay until they expire as usual, so a
-- replay of the key is recognised and refused (runIdempotent answers NOT_FOUND) instead of running the mutation
-- again, which would quietly write the erased data back.
ALTER TABLE runtime.idempotency_keys ADD COLUMN erased_at timestamptz;

-- Every principal of the caller's tenant (runtime.current_tenant(), set by withTenant), not only the caller: the
-- table's policy limits the app role to its own principal, so this runs as the owner, which needs BYPASSRLS (or
-- superuser) because the table forces Row-Level Security.
CREATE FUNCTION runtime.erase_idempotent_responses(p_operations text[], p_erased_at timestamptz)
  RETURNS int
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = runtime, pg_temp AS $$
DECLARE
  tenant uuid := runtime.current_tenant();
  n int;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'runtime.erase_idempotent_responses runs as its owner "%", which lacks BYPASSRLS', current_user
      USING HINT = format('Run ALTER ROLE %I BYPASSRLS as a superuser (or migrate as a role that has it).', current_user);
  END IF;
  IF tenant IS NULL THEN
    RAISE EXCEPTION 'runtime.erase_idempotent_responses needs the tenant of the transaction (app.tenant_id)'
      USING HINT = 'Call it inside withTenant or idempotentMutation.';
  END IF;
  IF p_erased_at IS NULL THEN
    RAISE EXCEPTION 'runtime.erase_idempotent_responses needs the time of the erase (p_erased_at)';
  END IF;
  UPDATE runtime.idempotency_keys
     SET response = jsonb_build_object('erased', true, 'erasedAt',
           to_char(p_erased_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
         fingerprint = 'erased',
         erased_at = p_erased_at
   WHERE tenant_id = tenant
     AND operation = ANY (p_operations)
     AND erased_at IS NULL;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
REVOKE ALL ON FUNCTION runtime.erase_idempotent_responses(text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION runtime.erase_idempotent_responses(text[], timestamptz) TO :app_role;
