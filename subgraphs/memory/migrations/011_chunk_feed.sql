-- Hybrid search at 1,000,000 records (issue 18): the in-process copy (src/vector-index/) now matches and ranks
-- full-text itself, from postings built out of the chunks' tsvectors, instead of asking PostgreSQL for every
-- matching chunk (one random heap page each: ~20,000 for a one-word query at 1,000,000 records). To keep those
-- postings current it follows the chunks as migration 007's feed follows the records:
--
-- * `chunks.search_xid`: the 64-bit id of the transaction that inserted the chunk. Chunks are never updated (the
--   service may only insert and delete them); the indexing job deletes a record's chunks and inserts the new ones
--   in one transaction, and every other delete goes with a write to the record or its deletion, which migration
--   007 already stamps. So "the chunks stamped at or above the last round's xmin" names every record whose text
--   changed without the record itself changing.
-- * A default, not a trigger: no per-row function call on a bulk load. Rows that exist get 1 (older than any
--   watermark; a copy's first load reads every chunk anyway) without rewriting the table; new rows the inserting
--   transaction's id.
-- * The service may no longer choose the column: INSERT is granted on the other columns only, so no insert can
--   stamp a chunk into the past and hide it from the copies.
ALTER TABLE memory.chunks ADD COLUMN search_xid xid8 NOT NULL DEFAULT '1';
ALTER TABLE memory.chunks ALTER COLUMN search_xid SET DEFAULT pg_current_xact_id();
-- The feed's scan: the tenant's chunks stamped at or above a watermark (usually none).
CREATE INDEX chunks_search_feed ON memory.chunks (tenant_id, search_xid);

REVOKE INSERT ON memory.chunks FROM :memory_role;
GRANT INSERT (tenant_id, record_id, n, record_version, content) ON memory.chunks TO :memory_role;
