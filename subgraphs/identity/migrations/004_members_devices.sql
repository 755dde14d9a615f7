-- Membership management and device administration from GraphQL (addMember, changeMemberRole, removeMember,
-- revokeDevice, renameDevice, setRemoteActionsEnabled). Only the grants these need, under the existing
-- Row-Level Security policies (every one of them confines rows to runtime.current_tenant()).

-- addMember / changeMemberRole / removeMember. The policy tenant_isolation (FOR ALL) checks the tenant on every one.
GRANT INSERT (tenant_id, user_id, role) ON identity.memberships TO :app_role;
GRANT UPDATE (role) ON identity.memberships TO :app_role;
GRANT DELETE ON identity.memberships TO :app_role;

-- removeMember hands the removed member's (revoked) devices to the member who removed them: a device's owner must be
-- a member of its tenant (composite foreign key), and the devices stay for their history and for the other
-- subgraphs that refer to them.
GRANT UPDATE (owner_id) ON identity.devices TO :app_role;

-- addMember names the user by e-mail, but the users policy hides everyone who is not yet a member of the current
-- tenant. This answers only the id of an existing user (null otherwise), nothing else about them.
CREATE FUNCTION identity.user_id_by_email(p_email text)
  RETURNS uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = identity, pg_temp AS $$
    SELECT identity.require_rls_bypass();
    SELECT u.id FROM identity.users u WHERE u.email = lower(btrim(p_email))
$$;
REVOKE ALL ON FUNCTION identity.user_id_by_email(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.user_id_by_email(text) TO :app_role;
