-- Interlock seals (PostgreSQL): one signed statement per commit of a
-- signing writer, over the hashes of the records that commit wrote
-- (src/core/crypto/seal.ts). The store inserts them in the append's own
-- transaction, after the append function has numbered and hashed the
-- records (src/core/stores/postgres/store.ts).
--
-- lock: none: a new table and its sequence; no table that exists is touched.
--
-- `at` is the commit's time, which each record it covers carries too (the
-- text the hash covers): the records of one effect find their seals by it,
-- along the primary key (one entry per commit, not per record). `id` keeps
-- the order written. `seal` is the stored seal's JSON; verify reads and
-- judges all of it, trusting no column.

CREATE TABLE :"schema".seals (
  at   text NOT NULL,
  id   bigserial,
  seal text NOT NULL,
  PRIMARY KEY (at, id)
);
