-- Memory subgraph: workspaces and the memory records in them. Every row belongs to a tenant and is isolated by
-- Row-Level Security (FORCE, so even the owner is filtered; the app works as the non-owner :app_role).
-- Keys are (tenant_id, id): record ids are chosen by clients, so two tenants may pick the same one without
-- ever seeing or blocking each other, and a record can only point at a workspace of its own tenant.
CREATE SCHEMA IF NOT EXISTS memory;
GRANT USAGE ON SCHEMA memory TO :app_role;

CREATE TABLE memory.workspaces (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  -- The principal (identity's user id) that created it; identity owns users, we keep the id only.
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- Query.workspaces: newest first, keyset on (created_at, id).
CREATE INDEX workspaces_newest ON memory.workspaces (tenant_id, created_at DESC, id DESC);
ALTER TABLE memory.workspaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory.workspaces FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory.workspaces
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON memory.workspaces TO :app_role;

CREATE TABLE memory.records (
  tenant_id uuid NOT NULL,
  -- Client-generated (PUT-style writes): unique within the tenant, not across tenants.
  id uuid NOT NULL,
  workspace_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind ~ '^[a-z0-9_.-]{1,64}$'),
  content text NOT NULL,
  tags text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 32),
  -- 1 on create, +1 on every write: the optimistic-concurrency token (putMemory's expectedVersion).
  version int NOT NULL CHECK (version >= 1),
  -- The principal that wrote the current version.
  author text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, workspace_id) REFERENCES memory.workspaces (tenant_id, id) ON DELETE CASCADE
);
-- Workspace.records: most recently updated first, keyset on (updated_at, id).
CREATE INDEX records_recent ON memory.records (tenant_id, workspace_id, updated_at DESC, id DESC);
ALTER TABLE memory.records ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory.records FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory.records
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
-- UPDATE also covers SELECT ... FOR UPDATE, which putMemory uses to serialise writers of one record.
GRANT SELECT, INSERT, UPDATE ON memory.records TO :app_role;
