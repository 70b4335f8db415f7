-- Interlock claim index (PostgreSQL).
--
-- The claim picks ready effects of the relay's targets, oldest first. With
-- 0003's indexes the planner had three ways to find them: the partial
-- "ready" index in (created_at, id) order, or a BitmapAnd of the target and
-- state indexes followed by a sort. On a backlog the statistics have not yet
-- caught up with (100,000 effects filled, then drained at once; autovacuum
-- analyses a minute later at best) it estimated 2 rows for the BitmapAnd and
-- took it: every claim then read and sorted the whole backlog to return 128
-- rows (40-60 ms per claim, most of a relay's time, in bench/relay).
--
-- One index now answers the claim exactly: the target's ready effects in
-- (created_at, id) order, read from the front up to the claim's limit, with
-- no sort. The two indexes it replaces go: every state change of an effect
-- inserted an entry into each of them. Listing by target (an operator's
-- query) reads the table instead.
--
-- Even with that index alone, stale statistics make a bitmap scan of it plus
-- a sort look cheaper (measured: 33 ms against 2.3 ms mid-drain), so the
-- claim is a function that plans without bitmap scans. A statistics-proof
-- plan matters most exactly when the backlog is large and new.
--
-- A claim or a lease renewal changes no indexed column; with room left on
-- the page it is a HOT update and adds no index entry at all.

DROP INDEX :"schema".effects_ready_idx;
DROP INDEX :"schema".effects_target_idx;

-- Every state change of an effect is an UPDATE of its row that changes an
-- indexed column (state), so it adds an entry to every index of the table;
-- each index costs every append. Two more go:
--  - state: replaced by an index of unsettled effects only (what the
--    in-flight scan and `outbox status` look for); a settled version adds
--    no entry to it;
--  - thread: an effect's thread is its journal, so listing a thread reads
--    the journal's records (journal_records' primary key) instead.
DROP INDEX :"schema".effects_state_idx;
DROP INDEX :"schema".effects_thread_idx;
CREATE INDEX effects_unsettled_idx ON :"schema".effects (state)
  WHERE state IN ('PROPOSED', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'AMBIGUOUS');

CREATE INDEX effects_claim_idx ON :"schema".effects (target, created_at, id)
  WHERE state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED');

ALTER TABLE :"schema".effects SET (fillfactor = 80);

-- The claim: per target, the oldest ready effects whose lease is free or ran
-- out, FOR UPDATE SKIP LOCKED (relays claiming at once take different rows and
-- never wait on each other or on an append), merged oldest first, leased with
-- a fresh fencing token and an expiry in database time. p_targets NULL: every
-- target; p_from NULL: from the oldest.
CREATE FUNCTION :"schema".claim(
  p_relay    text,
  p_limit    integer,
  p_lease_ms double precision,
  p_targets  text[],
  p_from     timestamptz,
  p_states   text[]
) RETURNS TABLE (
  id            text,
  journal       text,
  effect        json,
  tier          smallint,
  state         text,
  last_seq      bigint,
  detail        json,
  created_at    timestamptz,
  updated_at    timestamptz,
  lease_token   bigint,
  lease_expires timestamptz
)
LANGUAGE plpgsql
SET enable_bitmapscan = off
AS $fn$
#variable_conflict use_column
BEGIN
  IF p_targets IS NULL THEN
    RETURN QUERY
    WITH ready AS (
      SELECT x.id FROM :"schema".effects x
      WHERE x.state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED') AND x.state = ANY(p_states)
        AND x.created_at >= coalesce(p_from, '-infinity')
        AND (x.lease_expires IS NULL OR x.lease_expires < clock_timestamp())
      ORDER BY x.created_at, x.id LIMIT p_limit
      FOR UPDATE SKIP LOCKED)
    UPDATE :"schema".effects e
    SET lease_relay = p_relay, lease_token = nextval(':"schema".lease_tokens'), lease_expires = clock_timestamp() + p_lease_ms * interval '1 millisecond'
    FROM ready WHERE e.id = ready.id
    RETURNING e.id, e.journal, e.effect, e.tier, e.state, e.last_seq, e.detail, e.created_at, e.updated_at, e.lease_token, e.lease_expires;
  ELSE
    RETURN QUERY
    WITH ready AS (
      SELECT c.id FROM (SELECT DISTINCT unnest(p_targets)) AS t(target) CROSS JOIN LATERAL (
        SELECT x.id, x.created_at FROM :"schema".effects x
        WHERE x.target = t.target
          AND x.state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED') AND x.state = ANY(p_states)
          AND x.created_at >= coalesce(p_from, '-infinity')
          AND (x.lease_expires IS NULL OR x.lease_expires < clock_timestamp())
        ORDER BY x.created_at, x.id LIMIT p_limit
        FOR UPDATE SKIP LOCKED) c
      ORDER BY c.created_at, c.id LIMIT p_limit)
    UPDATE :"schema".effects e
    SET lease_relay = p_relay, lease_token = nextval(':"schema".lease_tokens'), lease_expires = clock_timestamp() + p_lease_ms * interval '1 millisecond'
    FROM ready WHERE e.id = ready.id
    RETURNING e.id, e.journal, e.effect, e.tier, e.state, e.last_seq, e.detail, e.created_at, e.updated_at, e.lease_token, e.lease_expires;
  END IF;
END
$fn$;
