-- Interlock seals (SQLite): one signed statement per commit of a signing
-- writer, over the hashes of the records that commit wrote
-- (src/core/crypto/seal.ts). Written in the append's own transaction.
--
-- lock: none: a new table; the install holds the journal file's write lock, as every write does.
--
-- `at` is the commit's time, which each record it covers carries too: the
-- records of one effect find their seals by it (an index of a few bytes per
-- commit, not per record). `seal` is the stored seal's JSON; verify reads
-- and judges all of it, trusting no column.

CREATE TABLE seals (
  id   INTEGER PRIMARY KEY,
  at   TEXT NOT NULL,
  seal TEXT NOT NULL
);
CREATE INDEX seals_at ON seals (at);
