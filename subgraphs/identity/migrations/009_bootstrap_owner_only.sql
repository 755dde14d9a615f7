-- Least privilege: creating a tenant with its first owner (bootstrap_tenant) and giving dev@localhost its first
-- password (set_development_password) are for the operator: the admin CLI and `npm start`'s development tenant run
-- them on the owner's (migrating role's) connection. Identity's running service never needs them, so its role
-- cannot call them (a bug in identity cannot create tenants or owners).
REVOKE EXECUTE ON FUNCTION identity.bootstrap_tenant(text, text, text) FROM :identity_role;
REVOKE EXECUTE ON FUNCTION identity.set_development_password(text) FROM :identity_role;
