-- Least privilege (runtime migration 005): this schema's grants move from the app role, which every subgraph's role
-- inherits, to catalog's own role, so no other service can read catalog's tables or call its functions.
SELECT runtime.move_grants('catalog', ':app_role', ':catalog_role');
