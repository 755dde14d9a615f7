-- Least privilege (runtime migration 005): this schema's grants move from the app role, which every subgraph's role
-- inherits, to memory's own role, so no other service can read memory's tables or call its functions.
SELECT runtime.move_grants('memory', ':app_role', ':memory_role');
