-- Interlock schema, baseline (SQLite): every object of a journal file, as the
-- first release installs it. Later changes are migrations of their own
-- (0002, ...); this file never changes once released (its checksum is
-- recorded in schema_migrations).
--
-- lock: none: creates the journal's tables (the install holds the file's write lock, as every write does).
--
-- journal_records is the truth: one hash-chained row per state change, per
-- journal (an agent thread). effects is a projection of it (each effect's
-- latest state) kept in the same transaction, for lookups and listing.
-- journals holds each journal's head, read inside every append's transaction
-- so writers in several processes extend the chain one after another.
--
-- Each append is its own durable commit, and a WAL commit writes every page
-- it changed in full before its fsync, so the pages an append dirties are
-- what it costs beyond the fsync itself: a step between two open states
-- (PROPOSED → AUTHORIZED → DISPATCHED) changes about five pages, a whole
-- effect about 26 (measured by reading the WAL's frame headers).

CREATE TABLE journals (
  journal   TEXT PRIMARY KEY,
  head_seq  INTEGER NOT NULL,
  head_hash TEXT NOT NULL
);

CREATE TABLE effects (
  id            TEXT PRIMARY KEY,
  journal       TEXT NOT NULL,
  thread        TEXT NOT NULL,
  target        TEXT NOT NULL,
  action        TEXT NOT NULL,
  tier          INTEGER NOT NULL CHECK (tier IN (1, 2, 3)),
  -- canonical JSON of the effect (id, thread, target, action, args, premises, key)
  effect        TEXT NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('PROPOSED', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REJECTED', 'FAILED', 'AMBIGUOUS')),
  last_seq      INTEGER NOT NULL,
  -- canonical JSON of the last record's data
  detail        TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  -- A relay's lease: its id, an expiry (milliseconds since the epoch) and a
  -- fencing token from the one-row lease_tokens counter, so every claim gets
  -- a number no earlier claim had. Appends a relay makes carry its token; the
  -- store compares it with the row inside the append's write transaction, so
  -- a relay that lost its lease can no longer move the effect.
  lease_relay   TEXT,
  lease_token   INTEGER,
  lease_expires INTEGER,
  -- When the effect reached COMMITTED, REJECTED or FAILED; NULL while it is
  -- open (AMBIGUOUS and HELD are open: they wait for people). Written once,
  -- by the append that settles the effect.
  settled_at    TEXT
);

-- The indexes of effects read settled_at, not state: SQLite rewrites a partial
-- index's entry whenever a column its condition reads is updated, so a
-- condition on `state` would cost every step. A step between two open states
-- then changes no index entry.
--  - effects_open: the effects not yet settled, which claims and the in-flight
--    scan read (adding `settled_at IS NULL`), and which are counted by state;
--  - effects_settled: the state of settled effects only, written once per
--    effect (settled states never change), for counting and listing by state.
-- Listing by thread reads the journal's records (an effect's thread is its
-- journal); listing by time and by target: 0002_retention.sql.
CREATE INDEX effects_open ON effects (created_at, id) WHERE settled_at IS NULL;
CREATE INDEX effects_settled ON effects (state) WHERE settled_at IS NOT NULL;

-- Keyed by (journal, seq) itself (WITHOUT ROWID): the record and its key live
-- in one b-tree instead of a rowid table plus the index of its primary key, so
-- an append writes one leaf there, not two.
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
) WITHOUT ROWID;

-- On the first 16 of the id's 64 hex digits: effect ids are hashes, so each
-- append lands on a random leaf of this index; entries a third the size split
-- those leaves a third as often. Readers repeat the expression and compare the
-- whole id.
CREATE INDEX journal_records_effect ON journal_records (substr(effect_id, 1, 16));

CREATE TABLE lease_tokens (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  last INTEGER NOT NULL
);
INSERT INTO lease_tokens (id, last) VALUES (1, 0);

-- One row per relay, upserted by its heartbeat: `outbox status` shows who drains the outbox.
CREATE TABLE relays (
  relay      TEXT PRIMARY KEY,
  info       TEXT NOT NULL,
  started_at TEXT NOT NULL,
  last_seen  TEXT NOT NULL
);
