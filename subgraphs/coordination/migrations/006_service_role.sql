-- Least privilege (runtime migration 005): this schema's grants move from the app role, which every subgraph's role
-- inherits, to coordination's own role, so no other service can read coordination's tables or call its functions.
SELECT runtime.move_grants('coordination', ':app_role', ':coordination_role');
