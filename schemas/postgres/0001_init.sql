-- Interlock journal, schema version 1 (PostgreSQL).
--
-- The schema placeholder (psql's syntax for a quoted identifier variable) is
-- replaced by `interlock install` with the configured name, validated and quoted.
--
-- journal_records is the truth: one hash-chained row per state change, per
-- journal (an agent thread). effects is a projection of it (each effect's
-- latest state) kept in the same transaction, for lookups and listing.
-- journals holds each journal's head; appends lock its row (FOR UPDATE), so
-- writers on any number of hosts extend a chain one after another.

CREATE TABLE :"schema".journals (
  journal   text PRIMARY KEY,
  head_seq  bigint NOT NULL,
  head_hash text NOT NULL
);

CREATE TABLE :"schema".effects (
  id         text PRIMARY KEY,
  journal    text NOT NULL,
  thread     text NOT NULL,
  target     text NOT NULL,
  action     text NOT NULL,
  tier       smallint NOT NULL CHECK (tier IN (1, 2, 3)),
  -- canonical JSON of the effect (json, not jsonb: the text is kept as written)
  effect     json NOT NULL,
  state      text NOT NULL CHECK (state IN ('PROPOSED', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REJECTED', 'FAILED', 'AMBIGUOUS')),
  last_seq   bigint NOT NULL,
  -- canonical JSON of the last record's data
  detail     json NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX effects_state_idx ON :"schema".effects (state);
CREATE INDEX effects_target_idx ON :"schema".effects (target);
CREATE INDEX effects_thread_idx ON :"schema".effects (thread);

CREATE TABLE :"schema".journal_records (
  journal   text NOT NULL,
  seq       bigint NOT NULL,
  effect_id text NOT NULL,
  state     text NOT NULL,
  -- ISO-8601 text, exactly as hashed
  at        text NOT NULL,
  -- canonical JSON text, exactly the bytes the hash covers
  data      text NOT NULL,
  prev_hash text NOT NULL,
  hash      text NOT NULL,
  PRIMARY KEY (journal, seq)
);

CREATE INDEX journal_records_effect_idx ON :"schema".journal_records (effect_id);
