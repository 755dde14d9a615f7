-- migration: allow-destructive: widening a CHECK constraint (drop and re-add with one more allowed value); no data changes.
-- The PUBLISHER role (catalog uploads). Roles form a lattice, not a ladder (runtime/src/roles.ts): PUBLISHER and
-- OPERATOR are both above VIEWER and below ADMIN, and neither covers the other.
ALTER TABLE identity.memberships DROP CONSTRAINT memberships_role_check;
ALTER TABLE identity.memberships
  ADD CONSTRAINT memberships_role_check CHECK (role IN ('OWNER', 'ADMIN', 'OPERATOR', 'PUBLISHER', 'VIEWER'));
