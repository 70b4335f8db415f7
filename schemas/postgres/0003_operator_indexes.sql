-- Interlock indexes for what operators run (PostgreSQL).
--
-- no-transaction
-- lock: effects SHARE UPDATE EXCLUSIVE: built with CREATE INDEX CONCURRENTLY: claims, appends and reads go on; the build waits for transactions older than it (a running pg_dump) to finish
--
-- `interlock outbox list` shows the newest effects first, a page at a time,
-- optionally of one target or between two times (--target, --since,
-- --until). Without an index in creation order each page read the whole
-- table and sorted it (a 300,000-effect outbox: a sequential scan of ~1 GB
-- per page). With these, a page reads its own rows and no more: the newest
-- first, backwards along (created_at, id); one target's, along (target,
-- created_at, id).
--
-- Each costs every append one index entry (a step changes the indexed
-- state, so PostgreSQL cannot make it a HOT update), measured in
-- bench/relay/README.md.

CREATE INDEX CONCURRENTLY IF NOT EXISTS effects_created_idx ON :"schema".effects (created_at, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS effects_target_created_idx ON :"schema".effects (target, created_at, id);
