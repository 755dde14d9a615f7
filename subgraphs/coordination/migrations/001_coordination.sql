-- Coordination: rooms and their append-only message logs (DESIGN.md §2, issue 2).
-- Tenant isolation is enforced here (RLS, FORCE), not only in resolvers. The app role may read and append
-- messages but never edit or delete them: the log is append-only even if a resolver has a bug.
CREATE SCHEMA IF NOT EXISTS coordination;
GRANT USAGE ON SCHEMA coordination TO :app_role;

CREATE TABLE coordination.rooms (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Sequence number of the room's newest message; postMessage increments it under the row lock, so writers to
  -- one room are serialised, numbers are gap-free, and commit order equals sequence order.
  last_seq int NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
  PRIMARY KEY (id),
  UNIQUE (tenant_id, id)
);
-- rooms connection: newest first, keyset (created_at, id) within a tenant.
CREATE INDEX rooms_tenant_created ON coordination.rooms (tenant_id, created_at DESC, id DESC);

ALTER TABLE coordination.rooms ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.rooms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.rooms
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON coordination.rooms TO :app_role;
-- Only the sequence counter may change; names, owners and timestamps are not editable (yet).
GRANT UPDATE (last_seq) ON coordination.rooms TO :app_role;

CREATE TABLE coordination.messages (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  room_id uuid NOT NULL,
  seq int NOT NULL CHECK (seq >= 1),
  body text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 16384),
  author text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (id),
  UNIQUE (room_id, seq),
  -- A message belongs to a room of its own tenant.
  FOREIGN KEY (tenant_id, room_id) REFERENCES coordination.rooms (tenant_id, id)
);

ALTER TABLE coordination.messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE coordination.messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON coordination.messages
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
-- Append-only: read and insert, nothing else (no UPDATE, DELETE or TRUNCATE).
REVOKE ALL ON coordination.messages FROM :app_role;
GRANT SELECT, INSERT ON coordination.messages TO :app_role;
