-- Revoked access tokens, shared by every verifier (gateway and subgraph replicas): see runtime/src/revocation.ts.
--
-- A row refuses every token that matches it and was issued (iat) no later than revoked_at, until expires_at (by then
-- those tokens have expired anyway). Tokens issued after the revocation (a member removed, then added again) pass.
--   kind 'jti'     value = the token's jti            one token
--   kind 'grant'   value = the token's gid            every token of an OAuth grant (a refresh-token family)
--   kind 'device'  value = the token's did            every token of an enrolled device
--   kind 'subject' value = '<tenant id>/<user id>'    every token of a member in a tenant
-- Ids only, no tenant data: verifiers load the whole table before they know any tenant, so there is no RLS.
-- Writers NOTIFY channel 'token_revocations' in the same transaction; listeners learn of a row when it commits.
CREATE TABLE runtime.token_revocations (
  kind text NOT NULL CHECK (kind IN ('jti', 'grant', 'device', 'subject')),
  value text NOT NULL CHECK (char_length(value) BETWEEN 1 AND 200),
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- The latest revocation of this (kind, value): tokens issued after it are not refused.
  revoked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, value)
);
-- Loading the live rows at start and purging the expired ones.
CREATE INDEX token_revocations_expires_at ON runtime.token_revocations (expires_at);
GRANT SELECT, INSERT, UPDATE, DELETE ON runtime.token_revocations TO :app_role;
