-- Interlock journal, schema version 1 (SQLite).
--
-- journal_records is the truth: one hash-chained row per state change, per
-- journal (an agent thread). effects is a projection of it (each effect's
-- latest state) kept in the same transaction, for lookups and listing.
-- journals holds each journal's head, read inside every append's transaction
-- so writers in several processes extend the chain one after another.

CREATE TABLE journals (
  journal   TEXT PRIMARY KEY,
  head_seq  INTEGER NOT NULL,
  head_hash TEXT NOT NULL
);

CREATE TABLE effects (
  id         TEXT PRIMARY KEY,
  journal    TEXT NOT NULL,
  thread     TEXT NOT NULL,
  target     TEXT NOT NULL,
  action     TEXT NOT NULL,
  tier       INTEGER NOT NULL CHECK (tier IN (1, 2, 3)),
  -- canonical JSON of the effect (id, thread, target, action, args, premises, key)
  effect     TEXT NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('PROPOSED', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REJECTED', 'FAILED', 'AMBIGUOUS')),
  last_seq   INTEGER NOT NULL,
  -- canonical JSON of the last record's data
  detail     TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE INDEX effects_state ON effects (state);
CREATE INDEX effects_target ON effects (target);
CREATE INDEX effects_thread ON effects (thread);

CREATE TABLE journal_records (
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
);

CREATE INDEX journal_records_effect ON journal_records (effect_id);
