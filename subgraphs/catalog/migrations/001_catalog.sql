-- Catalog subgraph: plugins and their declared releases. Every row belongs to a tenant and is isolated by
-- Row-Level Security (FORCE, so even the owner is filtered; the app works as the non-owner :app_role).
CREATE SCHEMA IF NOT EXISTS catalog;
GRANT USAGE ON SCHEMA catalog TO :app_role;

CREATE TABLE catalog.plugins (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  -- Byte order ("C"): the listing order, and so the keyset, is the same on every server and on PGlite.
  name text COLLATE "C" NOT NULL CHECK (name ~ '^[a-z][a-z0-9-]{1,62}$'),
  display_name text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 100),
  description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 2000),
  -- The principal (identity's user id) that created it.
  publisher text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- Also the keyset index of Query.plugins (name, id).
  CONSTRAINT plugins_name_unique UNIQUE (tenant_id, name)
);
ALTER TABLE catalog.plugins ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.plugins FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.plugins
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON catalog.plugins TO :app_role;

CREATE TABLE catalog.releases (
  tenant_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  plugin_id uuid NOT NULL,
  -- Semantic version MAJOR.MINOR.PATCH[-prerelease], checked by the resolver; no build metadata, so text
  -- equality is semver equality.
  version text COLLATE "C" NOT NULL CHECK (char_length(version) BETWEEN 5 AND 64),
  state text NOT NULL DEFAULT 'AWAITING_UPLOAD' CHECK (state IN (
    'AWAITING_UPLOAD', 'QUARANTINED', 'ANALYSIS_FAILED', 'IN_REVIEW', 'APPROVED', 'REJECTED', 'REVOKED')),
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- One release per plugin and version (plugin ids are per tenant, so the tenant leads the key).
  CONSTRAINT releases_version_unique UNIQUE (tenant_id, plugin_id, version),
  FOREIGN KEY (tenant_id, plugin_id) REFERENCES catalog.plugins (tenant_id, id) ON DELETE CASCADE
);
-- Plugin.releases: newest first, keyset on (created_at, id).
CREATE INDEX releases_newest ON catalog.releases (tenant_id, plugin_id, created_at DESC, id DESC);
ALTER TABLE catalog.releases ENABLE ROW LEVEL SECURITY;
ALTER TABLE catalog.releases FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON catalog.releases
  USING (tenant_id = runtime.current_tenant())
  WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT ON catalog.releases TO :app_role;
