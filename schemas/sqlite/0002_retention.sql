-- Interlock retention (SQLite): what `interlock outbox prune` needs to take
-- settled history out of the journals and have them verify still (see
-- schemas/postgres/0002_retention.sql for the why), and indexes for listing.
--
-- lock: none: new tables and indexes; the install holds the journal file's write lock while it builds the indexes (other writers wait, up to their busy timeout)

CREATE TABLE checkpoints (
  digest   TEXT PRIMARY KEY,
  made_at  TEXT NOT NULL,
  document TEXT NOT NULL
);

CREATE TABLE journal_bases (
  journal    TEXT PRIMARY KEY,
  seq        INTEGER NOT NULL,
  hash       TEXT NOT NULL,
  checkpoint TEXT NOT NULL REFERENCES checkpoints (digest)
);

-- `interlock outbox list`, newest first, a page at a time, optionally of one
-- target or between two times: read backwards along creation order instead
-- of sorting the table. SQLite ends every index entry with the rowid, so
-- (created_at) is (created_at, rowid), the listing's own order. created_at
-- and target never change, so only a proposal writes these entries.
CREATE INDEX effects_created ON effects (created_at);
CREATE INDEX effects_target_created ON effects (target, created_at);
