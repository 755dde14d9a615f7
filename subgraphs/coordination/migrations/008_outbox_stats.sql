-- The outboxes' backlog for /metrics (runtime/src/metrics/, docs/operations.md#metrics): rows held and the age of
-- the oldest in seconds, for every tenant (the tables have forced row-level security, so the service role alone sees
-- none without a tenant). One statement per scrape; intent_outbox holds at most OUTBOX_RETENTION_SECONDS of rows.
CREATE FUNCTION coordination.outbox_stats()
  RETURNS TABLE (outbox text, pending bigint, oldest_seconds float8)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = coordination, pg_temp AS $$
    SELECT 'intent_outbox', count(*), COALESCE(extract(epoch FROM now() - min(created_at))::float8, 0)
      FROM coordination.intent_outbox
    UNION ALL
    SELECT 'agent_message_outbox', count(*), COALESCE(extract(epoch FROM now() - min(at))::float8, 0)
      FROM coordination.agent_message_outbox
$$;
REVOKE ALL ON FUNCTION coordination.outbox_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coordination.outbox_stats() TO :coordination_role;
