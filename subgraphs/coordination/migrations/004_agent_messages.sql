-- Coordination: targeted agent messages (point-to-point, request/reply by correlation id) and inbox
-- acknowledgement states (issue 4, Rooms bullet). An inbox belongs to a recipient address: an enrolled device
-- ('device', its id) or a user ('user', the principal id). Tenant data has RLS (FORCE).

-- Per-inbox counter: sendAgentMessage increments it under the row lock, so an inbox's messages are numbered
-- 1, 2, 3… without gaps and commit in sequence order (the inbox stream relies on it, as rooms and intents do).
CREATE TABLE coordination.agent_inboxes (
  tenant_id uuid NOT NULL,
  recipient_kind text NOT NULL CHECK (recipient_kind IN ('device', 'user')),
  recipient_id uuid NOT NULL,
  last_seq int NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
  PRIMARY KEY (tenant_id, recipient_kind, recipient_id)
);
ALTER TABLE coordination.agent_inboxes ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.agent_inboxes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.agent_inboxes
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON coordination.agent_inboxes TO :app_role;
GRANT UPDATE (last_seq) ON coordination.agent_inboxes TO :app_role;

-- One message in one inbox. Body, addresses and correlation never change; only the acknowledgement columns do
-- (the app role may update nothing else). state moves forward only (src/messages/states.ts); each state has
-- its own timestamp, set when the recipient acknowledged it (a skipped state keeps a null timestamp).
CREATE TABLE coordination.agent_messages (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL,
  recipient_kind text NOT NULL CHECK (recipient_kind IN ('device', 'user')),
  recipient_id uuid NOT NULL,
  seq int NOT NULL CHECK (seq >= 1),
  sender_kind text NOT NULL CHECK (sender_kind IN ('device', 'user')),
  sender_id uuid NOT NULL,
  body text NOT NULL CHECK (octet_length(body) BETWEEN 1 AND 16384),
  content_type text NOT NULL CHECK (char_length(content_type) BETWEEN 3 AND 100),
  correlation_id text CHECK (correlation_id IS NULL OR char_length(correlation_id) BETWEEN 1 AND 200),
  reply_to uuid,
  state text NOT NULL DEFAULT 'QUEUED'
    CHECK (state IN ('QUEUED', 'DELIVERED', 'READ', 'HANDLED', 'ACKNOWLEDGED', 'FAILED')),
  failure_reason text CHECK (failure_reason IS NULL OR char_length(failure_reason) BETWEEN 1 AND 500),
  created_at timestamptz NOT NULL,
  -- A message still QUEUED (never acknowledged as delivered) at this time counts as EXPIRED.
  expires_at timestamptz CHECK (expires_at IS NULL OR expires_at > created_at),
  delivered_at timestamptz,
  read_at timestamptz,
  handled_at timestamptz,
  acknowledged_at timestamptz,
  failed_at timestamptz,
  PRIMARY KEY (id),
  UNIQUE (tenant_id, id),
  UNIQUE (tenant_id, recipient_kind, recipient_id, seq),
  CHECK ((state = 'FAILED') = (failure_reason IS NOT NULL)),
  FOREIGN KEY (tenant_id, recipient_kind, recipient_id)
    REFERENCES coordination.agent_inboxes (tenant_id, recipient_kind, recipient_id),
  FOREIGN KEY (tenant_id, reply_to) REFERENCES coordination.agent_messages (tenant_id, id)
);
-- The server-side cursor: the lowest open seq of an inbox (everything below it is terminal).
CREATE INDEX agent_messages_open ON coordination.agent_messages (tenant_id, recipient_kind, recipient_id, seq)
  WHERE state IN ('QUEUED', 'DELIVERED', 'READ', 'HANDLED');
-- sentAgentMessages: newest first per sender, keyset (created_at, id).
CREATE INDEX agent_messages_sent ON coordination.agent_messages
  (tenant_id, sender_kind, sender_id, created_at DESC, id DESC);
ALTER TABLE coordination.agent_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.agent_messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.agent_messages
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
REVOKE ALL ON coordination.agent_messages FROM :app_role;
GRANT SELECT, INSERT ON coordination.agent_messages TO :app_role;
GRANT UPDATE (state, failure_reason, delivered_at, read_at, handled_at, acknowledged_at, failed_at)
  ON coordination.agent_messages TO :app_role;

-- Transactional outbox: one row per send and per acknowledgement, written with it; the NOTIFY on
-- 'coordination_agent_messages' carries only keys. Relays to other transports can read it in order of id.
CREATE TABLE coordination.agent_message_outbox (
  tenant_id uuid NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  message_id uuid NOT NULL,
  recipient_kind text NOT NULL,
  recipient_id uuid NOT NULL,
  seq int NOT NULL,
  -- 'SENT' for a new message, else the acknowledged state.
  event text NOT NULL,
  at timestamptz NOT NULL,
  PRIMARY KEY (id),
  FOREIGN KEY (tenant_id, message_id) REFERENCES coordination.agent_messages (tenant_id, id)
);
ALTER TABLE coordination.agent_message_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.agent_message_outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.agent_message_outbox
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
REVOKE ALL ON coordination.agent_message_outbox FROM :app_role;
GRANT SELECT, INSERT ON coordination.agent_message_outbox TO :app_role;
