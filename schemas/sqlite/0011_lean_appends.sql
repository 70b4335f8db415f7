-- Interlock journal, fewer pages per append (SQLite). Numbered 0011, after
-- PostgreSQL's 0005-0010, so that one number names one change across stores.
--
-- Each append is its own durable commit, and a WAL commit writes every page
-- it changed in full before its fsync, so the pages an append dirties are
-- what it costs beyond the fsync itself. Versions 1 and 3 made a step between
-- two open states (PROPOSED → AUTHORIZED → DISPATCHED) change about nine
-- pages; this version brings it to about five, and a whole effect from ~37
-- to ~26 (measured by reading the WAL's frame headers).
--
-- 1. journal_records is keyed by (journal, seq) itself (WITHOUT ROWID): the
--    record and its key live in one b-tree instead of a rowid table plus the
--    index of its primary key, so an append writes one leaf there, not two;
--    the index by effect keeps a prefix of the id (see below).
-- 2. The effects indexes that held the state (effects_state, effects_ready)
--    are replaced by one partial index on the effects not yet settled, whose
--    condition reads settled_at: a column written once, by the append that
--    settles the effect. A step between two open states then changes no index
--    entry (SQLite rewrites a partial index's entry whenever a column its
--    condition reads is updated, so a condition on `state` would not do).
--    Claims and the in-flight scan read it by adding `settled_at IS NULL`.
--    Counting and listing by state keep an index: effects_settled, on the
--    state of settled effects only, written once per effect (settled states
--    never change); the open effects are few and counted through effects_open.

CREATE TABLE journal_records_v11 (
  journal   TEXT NOT NULL,
  seq       INTEGER NOT NULL,
  effect_id TEXT NOT NULL,
  state     TEXT NOT NULL,
  at        TEXT NOT NULL,
  -- canonical JSON text, exactly the bytes the hash covers
  data      TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash      TEXT NOT NULL,
  PRIMARY KEY (journal, seq)
) WITHOUT ROWID;

INSERT INTO journal_records_v11 (journal, seq, effect_id, state, at, data, prev_hash, hash)
  SELECT journal, seq, effect_id, state, at, data, prev_hash, hash FROM journal_records ORDER BY journal, seq;

-- Drops journal_records_effect with it.
DROP TABLE journal_records;
ALTER TABLE journal_records_v11 RENAME TO journal_records;
-- On the first 16 of the id's 64 hex digits: effect ids are hashes, so each
-- append lands on a random leaf of this index; entries a third the size split
-- those leaves a third as often. Readers repeat the expression and compare the
-- whole id.
CREATE INDEX journal_records_effect ON journal_records (substr(effect_id, 1, 16));

-- When the effect reached COMMITTED, REJECTED or FAILED; NULL while it is open
-- (AMBIGUOUS and HELD are open: they wait for people).
ALTER TABLE effects ADD COLUMN settled_at TEXT;
UPDATE effects SET settled_at = updated_at WHERE state IN ('COMMITTED', 'REJECTED', 'FAILED');

DROP INDEX effects_state;
DROP INDEX effects_ready;
-- 3. Each proposal also inserted an entry into the target and thread indexes,
--    which only operators' listings read (as PostgreSQL's 0006 found too):
--    listing by thread reads the journal's records (an effect's thread is its
--    journal, and journal_records is keyed by journal), listing by target
--    reads the table.
DROP INDEX effects_target;
DROP INDEX effects_thread;
CREATE INDEX effects_open ON effects (created_at, id) WHERE settled_at IS NULL;
CREATE INDEX effects_settled ON effects (state) WHERE settled_at IS NOT NULL;
