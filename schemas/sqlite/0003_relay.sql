-- Interlock relay: leases and heartbeats (SQLite).
--
-- A relay claims a ready effect by taking its lease: the relay's id, an
-- expiry (milliseconds since the epoch) and a fencing token from the one-row
-- lease_tokens counter, so every claim gets a number no earlier claim had.
-- Appends a relay makes carry its token; the store compares it with the row
-- inside the append's write transaction, so a relay that lost its lease can
-- no longer move the effect.

ALTER TABLE effects ADD COLUMN lease_relay TEXT;
ALTER TABLE effects ADD COLUMN lease_token INTEGER;
ALTER TABLE effects ADD COLUMN lease_expires INTEGER;

CREATE TABLE lease_tokens (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  last INTEGER NOT NULL
);
INSERT INTO lease_tokens (id, last) VALUES (1, 0);

CREATE INDEX effects_ready ON effects (created_at, id)
  WHERE state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED');

CREATE TABLE relays (
  relay      TEXT PRIMARY KEY,
  info       TEXT NOT NULL,
  started_at TEXT NOT NULL,
  last_seen  TEXT NOT NULL
);
