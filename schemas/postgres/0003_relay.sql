-- Interlock relay: leases and heartbeats (PostgreSQL).
--
-- A relay claims a ready effect by taking its lease: the relay's id, an
-- expiry (database time, so relays on several hosts agree) and a fencing
-- token drawn from one sequence, so every claim gets a number no earlier
-- claim had. Appends a relay makes carry its token; the store compares it
-- with the row inside the append's transaction, so a relay that lost its
-- lease (paused, partitioned) can no longer move the effect.

ALTER TABLE :"schema".effects
  ADD COLUMN lease_relay   text,
  ADD COLUMN lease_token   bigint,
  ADD COLUMN lease_expires timestamptz;

CREATE SEQUENCE :"schema".lease_tokens;

-- What claim scans: effects a relay may take (PROPOSED, AUTHORIZED, and DISPATCHED whose lease ran out).
CREATE INDEX effects_ready_idx ON :"schema".effects (created_at, id)
  WHERE state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED');

-- One row per relay, upserted by its heartbeat: `outbox status` shows who drains the outbox.
CREATE TABLE :"schema".relays (
  relay      text PRIMARY KEY,
  info       json NOT NULL,
  started_at timestamptz NOT NULL,
  last_seen  timestamptz NOT NULL
);
