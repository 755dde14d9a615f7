-- Least privilege (runtime migration 005): this schema's grants move from the app role, which every subgraph's role
-- inherits, to identity's own role, so no other service can read identity's tables or call its functions.
SELECT runtime.move_grants('identity', ':app_role', ':identity_role');
