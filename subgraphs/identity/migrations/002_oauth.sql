-- OAuth 2.0 authority state (oidc-provider's models), the tenant context of each grant, and enrolled devices' keys.
--
-- oauth_store holds oidc-provider's short-lived artefacts (sessions, interactions, authorization and device codes,
-- refresh tokens, grants). The id column stores SHA-256 of the model's id, never the id itself: for refresh tokens
-- and codes the id *is* the secret, so a read of this table yields nothing that can be redeemed. Rows are not tenant
-- data (a device code has no tenant until a user approves it); the tenant of a grant lives in oauth_grants.
CREATE TABLE identity.oauth_store (
  model text NOT NULL,
  id_hash bytea NOT NULL,
  payload jsonb NOT NULL,
  grant_id text,
  user_code text,
  uid text,
  expires_at timestamptz,
  consumed_at timestamptz,
  PRIMARY KEY (model, id_hash)
);
CREATE INDEX oauth_store_grant ON identity.oauth_store (grant_id) WHERE grant_id IS NOT NULL;
CREATE UNIQUE INDEX oauth_store_user_code ON identity.oauth_store (model, user_code) WHERE user_code IS NOT NULL;
CREATE UNIQUE INDEX oauth_store_uid ON identity.oauth_store (model, uid) WHERE uid IS NOT NULL;
CREATE INDEX oauth_store_expires ON identity.oauth_store (expires_at);
GRANT SELECT, INSERT, UPDATE, DELETE ON identity.oauth_store TO :app_role;

-- Devices enrolled by the device authorization grant register the public key (JWK) they sign reports with.
ALTER TABLE identity.devices ADD COLUMN public_jwk jsonb;
ALTER TABLE identity.devices ADD COLUMN key_thumbprint text;
ALTER TABLE identity.devices ADD COLUMN client_id text;
ALTER TABLE identity.devices ADD COLUMN enrolled_at timestamptz;
ALTER TABLE identity.devices ADD COLUMN revoked_at timestamptz;
ALTER TABLE identity.devices ADD CONSTRAINT devices_enrolled_key
  CHECK (status <> 'ENROLLED' OR (public_jwk IS NOT NULL AND key_thumbprint IS NOT NULL));
GRANT INSERT (public_jwk, key_thumbprint, client_id, status, enrolled_at) ON identity.devices TO :app_role;
GRANT UPDATE (name, status, remote_actions_enabled, revoked_at) ON identity.devices TO :app_role;

-- Who a grant (one sign-in or one device enrolment, and every token refreshed from it) acts for: tenant, user and,
-- for a device, the device. Tokens read it (with the member's current role) when they are issued.
CREATE TABLE identity.oauth_grants (
  grant_id text PRIMARY KEY,
  tenant_id uuid NOT NULL,
  user_id uuid NOT NULL,
  device_id uuid REFERENCES identity.devices (id),
  client_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, user_id) REFERENCES identity.memberships (tenant_id, user_id) ON DELETE CASCADE
);
CREATE INDEX oauth_grants_device ON identity.oauth_grants (device_id) WHERE device_id IS NOT NULL;
CREATE INDEX oauth_grants_member ON identity.oauth_grants (tenant_id, user_id);
ALTER TABLE identity.oauth_grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity.oauth_grants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON identity.oauth_grants
  USING (tenant_id = runtime.current_tenant()) WITH CHECK (tenant_id = runtime.current_tenant());
GRANT SELECT, INSERT, DELETE ON identity.oauth_grants TO :app_role;

-- Token issuance has no tenant context yet (it is what establishes one): this reads a grant's context together with
-- the member's *current* role and the device's status, so a demoted member or a revoked device gets no new token.
CREATE FUNCTION identity.grant_context(p_grant_id text)
  RETURNS TABLE (tenant_id uuid, user_id uuid, device_id uuid, client_id text, role text, device_status text)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT g.tenant_id, g.user_id, g.device_id, g.client_id, m.role, d.status
      FROM identity.oauth_grants g
      JOIN identity.memberships m ON m.tenant_id = g.tenant_id AND m.user_id = g.user_id
      LEFT JOIN identity.devices d ON d.id = g.device_id
     WHERE g.grant_id = p_grant_id AND identity.require_rls_bypass()
$$;
REVOKE ALL ON FUNCTION identity.grant_context(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.grant_context(text) TO :app_role;
