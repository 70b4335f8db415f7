-- Interlock chained append (PostgreSQL): the states of one effect that are
-- made durable together (Store.append's chain: a proposal with AUTHORIZED and
-- DISPATCHED or REJECTED, or AUTHORIZED with DISPATCHED) as one statement;
-- and append_step(), the one-request append, with fewer statements per call.
--
-- lock: none: adds a function and replaces one; no table is touched.
--
-- A gate's first commit for an effect no rule holds is such a chain. append()
-- hands a batch naming one effect more than once to append_each(), which
-- writes request by request: it reads the effect again for each, inserts its
-- row and then updates it once per later state (each update of the indexed
-- state adds an entry to every index of effects), and the store wraps the
-- call in a statement that rolls the batch back when a chain comes out
-- partly written. append_chain() takes the chain whole instead:
--   1. a move locks the effect, then its journal's head, in one statement
--      (FOR UPDATE OF the effect, then the head: the order append() takes
--      them in); a proposal locks the head, then looks for the effect, which
--      one proposed concurrently has committed by now;
--   2. compare-and-set on the chain's first state, and fencing (the lease,
--      one for the whole chain: every request of a chain names the same
--      effect, so the same lease), decide for the chain: all or nothing;
--   3. each state its own record, chained and hashed in order with
--      record-hash.ts's formula, byte for byte;
--   4. the records in one INSERT, the head once, the effect's row once, at
--      the chain's last state, all in one statement;
--   5. each channel the records wake is notified, at commit.
-- It answers one text value, as append_step() does:
--   '<seq> <prev_hash> <hash 1> ... <hash n> <journal>' when the chain was
--   written (seq: the first record's; the records follow it one by one,
--   each record's prev_hash the hash before it);
--   NULL when compare-and-set or fencing lost: nothing was written.
-- The client checks each `from -> to` against the lifecycle table before
-- calling, as for append().
--
-- Each SQL statement a PL/pgSQL function runs has its own fixed cost (plan
-- check, executor start and end), which a sequential caller pays on every
-- append; both functions here run three for a move (the locks, the writes,
-- the notification) where append_step() ran five: the effect's and the
-- head's locks are one statement, and the check that a proposal's effect
-- does not exist yet is made for proposals only (it was a condition of an
-- IF, which runs as a query whatever its first operand).

CREATE FUNCTION :"schema".append_chain(
  p_id          text,
  p_from        text,      -- the first state's `from`; NULL: the chain starts with the effect's proposal
  p_to          text[],    -- the states, in order
  p_data        text[],    -- each record's canonical data text
  p_thread      text,      -- a proposal: the effect's thread (its journal); NULL for a move
  p_target      text,
  p_action      text,
  p_tier        smallint,
  p_effect      text,      -- a proposal: the effect's canonical JSON
  p_lease_relay text,
  p_lease_token bigint,
  p_channels    text[],    -- the NOTIFY channels the chain's records wake (notify.ts decides), each once
  p_at          text,
  p_genesis     text,
  p_payload     text
) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
  n         integer := coalesce(cardinality(p_to), 0);
  v_state   text;
  v_lrelay  text;
  v_ltoken  bigint;
  v_last    bigint;
  v_journal text;
  v_seq     bigint;
  v_prev    text;
  v_prevs   text[] := '{}';
  v_hashes  text[] := '{}';
  v_answer  text;
  c         integer;
BEGIN
  IF n = 0 OR array_ndims(p_to) <> 1 OR array_lower(p_to, 1) <> 1
     OR coalesce(cardinality(p_data), -1) <> n OR array_lower(p_data, 1) <> 1 THEN
    RAISE EXCEPTION 'append_chain: the states and their data must be one-dimensional arrays, from 1, of one length' USING ERRCODE = '22023';
  END IF;

  IF p_thread IS NULL THEN
    -- A move: the effect, then its journal's head (every effect's journal has one), locked by one statement.
    SELECT x.journal, x.state, x.lease_relay, x.lease_token, x.last_seq, h.head_seq, h.head_hash
      INTO v_journal, v_state, v_lrelay, v_ltoken, v_last, v_seq, v_prev
      FROM :"schema".effects x JOIN :"schema".journals h ON h.journal = x.journal
      WHERE x.id = p_id
      FOR UPDATE OF x, h;
    IF NOT FOUND THEN
      -- No such effect. One whose journal has no head is damage no append leaves: refused, not answered as lost.
      IF EXISTS (SELECT 1 FROM :"schema".effects x WHERE x.id = p_id AND NOT EXISTS (SELECT 1 FROM :"schema".journals h WHERE h.journal = x.journal)) THEN
        RAISE EXCEPTION 'effect %''s journal has no head row; the journal was changed by hand', p_id;
      END IF;
      RETURN NULL;
    END IF;
    IF v_state IS DISTINCT FROM p_from
       OR (p_lease_relay IS NOT NULL AND NOT coalesce(v_lrelay <> '' AND v_lrelay = p_lease_relay AND v_ltoken = p_lease_token, false)) THEN
      RETURN NULL;
    END IF;
  ELSIF p_lease_relay IS NOT NULL THEN
    -- A proposal carrying a lease: no effect holds it.
    RETURN NULL;
  ELSE
    v_journal := p_thread;
    SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journal FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO :"schema".journals AS h (journal, head_seq, head_hash) VALUES (v_journal, 0, p_genesis) ON CONFLICT (journal) DO NOTHING;
      GET DIAGNOSTICS c = ROW_COUNT;
      IF c = 1 THEN
        v_seq := 0;
        v_prev := p_genesis;
      ELSE
        SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journal FOR UPDATE;
      END IF;
    END IF;
    -- Checked under its journal's lock: an effect proposed concurrently is committed by now, and wins.
    IF EXISTS (SELECT 1 FROM :"schema".effects x WHERE x.id = p_id) THEN
      RETURN NULL;
    END IF;
  END IF;

  v_answer := (v_seq + 1)::text || ' ' || v_prev;
  FOR k IN 1 .. n LOOP
    v_prevs[k] := v_prev;
    v_prev := encode(sha256(convert_to(
      v_journal || E'\n' || (v_seq + k)::text || E'\n' || p_id || E'\n' || p_to[k] || E'\n' || p_at || E'\n' || p_data[k] || E'\n' || v_prev,
      'UTF8')), 'hex');
    v_hashes[k] := v_prev;
    v_answer := v_answer || ' ' || v_prev;
  END LOOP;

  -- Records, head and effect in one statement; the effect's row is written once, at the last state.
  IF p_thread IS NULL THEN
    WITH rec AS (
      INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
      SELECT v_journal, v_seq + k, p_id, p_to[k], p_at, p_data[k], v_prevs[k], v_hashes[k] FROM generate_series(1, n) AS k),
    head AS (
      UPDATE :"schema".journals h SET head_seq = v_seq + n, head_hash = v_prev WHERE h.journal = v_journal)
    UPDATE :"schema".effects x
      SET state = p_to[n], last_seq = v_seq + n, detail = p_data[n]::json, updated_at = p_at::timestamptz
      WHERE x.id = p_id AND x.last_seq = v_last;
    GET DIAGNOSTICS c = ROW_COUNT;
    IF c <> 1 THEN
      RAISE EXCEPTION 'effect % changed under an append that held its lock; something writes it without one', p_id;
    END IF;
  ELSE
    WITH rec AS (
      INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
      SELECT v_journal, v_seq + k, p_id, p_to[k], p_at, p_data[k], v_prevs[k], v_hashes[k] FROM generate_series(1, n) AS k),
    head AS (
      UPDATE :"schema".journals h SET head_seq = v_seq + n, head_hash = v_prev WHERE h.journal = v_journal)
    INSERT INTO :"schema".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
    VALUES (p_id, v_journal, v_journal, p_target, p_action, p_tier, p_effect::json, p_to[n], v_seq + n, p_data[n]::json,
            p_at::timestamptz, p_at::timestamptz);
  END IF;

  -- Delivered at commit, and only then: a listener never hears of a write that did not happen.
  FOR k IN 1 .. coalesce(cardinality(p_channels), 0) LOOP
    PERFORM pg_notify(p_channels[k], p_payload);
  END LOOP;
  RETURN v_answer || ' ' || v_journal;
END
$fn$;

-- append_step(), as in the baseline (one request, answered in one text
-- value), with the statements of append_chain(): a move locks its effect and
-- the journal's head in one statement, and only a proposal looks for an
-- effect that exists already.
CREATE OR REPLACE FUNCTION :"schema".append_step(
  p_id          text,
  p_from        text,
  p_to          text,
  p_data        text,
  p_thread      text,     -- a proposal: the effect's thread (its journal); NULL for a move
  p_target      text,
  p_action      text,
  p_tier        smallint,
  p_effect      text,
  p_lease_relay text,
  p_lease_token bigint,
  p_channel     text,
  p_at          text,
  p_genesis     text,
  p_payload     text
) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
  v_state   text;
  v_lrelay  text;
  v_ltoken  bigint;
  v_last    bigint;
  v_journal text;
  v_seq     bigint;
  v_prev    text;
  v_hash    text;
  n         integer;
BEGIN
  IF p_thread IS NULL THEN
    -- A move: the effect, then its journal's head (every effect's journal has one), locked by one statement.
    SELECT x.journal, x.state, x.lease_relay, x.lease_token, x.last_seq, h.head_seq, h.head_hash
      INTO v_journal, v_state, v_lrelay, v_ltoken, v_last, v_seq, v_prev
      FROM :"schema".effects x JOIN :"schema".journals h ON h.journal = x.journal
      WHERE x.id = p_id
      FOR UPDATE OF x, h;
    IF NOT FOUND THEN
      -- No such effect. One whose journal has no head is damage no append leaves: refused, not answered as lost.
      IF EXISTS (SELECT 1 FROM :"schema".effects x WHERE x.id = p_id AND NOT EXISTS (SELECT 1 FROM :"schema".journals h WHERE h.journal = x.journal)) THEN
        RAISE EXCEPTION 'effect %''s journal has no head row; the journal was changed by hand', p_id;
      END IF;
      RETURN NULL;
    END IF;
    IF v_state IS DISTINCT FROM p_from
       OR (p_lease_relay IS NOT NULL AND NOT coalesce(v_lrelay <> '' AND v_lrelay = p_lease_relay AND v_ltoken = p_lease_token, false)) THEN
      RETURN NULL;
    END IF;
  ELSIF p_lease_relay IS NOT NULL THEN
    -- A proposal carrying a lease: no effect holds it.
    RETURN NULL;
  ELSE
    v_journal := p_thread;
    SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journal FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO :"schema".journals AS h (journal, head_seq, head_hash) VALUES (v_journal, 0, p_genesis) ON CONFLICT (journal) DO NOTHING;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n = 1 THEN
        v_seq := 0;
        v_prev := p_genesis;
      ELSE
        SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journal FOR UPDATE;
      END IF;
    END IF;
    -- Checked under its journal's lock: an effect proposed concurrently is committed by now, and wins.
    IF EXISTS (SELECT 1 FROM :"schema".effects x WHERE x.id = p_id) THEN
      RETURN NULL;
    END IF;
  END IF;

  v_seq := v_seq + 1;
  v_hash := encode(sha256(convert_to(
    v_journal || E'\n' || v_seq::text || E'\n' || p_id || E'\n' || p_to || E'\n' || p_at || E'\n' || p_data || E'\n' || v_prev,
    'UTF8')), 'hex');

  -- Record, head and effect in one statement.
  IF p_thread IS NULL THEN
    WITH rec AS (
      INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
      VALUES (v_journal, v_seq, p_id, p_to, p_at, p_data, v_prev, v_hash)),
    head AS (
      UPDATE :"schema".journals h SET head_seq = v_seq, head_hash = v_hash WHERE h.journal = v_journal)
    UPDATE :"schema".effects x
      SET state = p_to, last_seq = v_seq, detail = p_data::json, updated_at = p_at::timestamptz
      WHERE x.id = p_id AND x.last_seq = v_last;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> 1 THEN
      RAISE EXCEPTION 'effect % changed under an append that held its lock; something writes it without one', p_id;
    END IF;
  ELSE
    WITH rec AS (
      INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
      VALUES (v_journal, v_seq, p_id, p_to, p_at, p_data, v_prev, v_hash)),
    head AS (
      UPDATE :"schema".journals h SET head_seq = v_seq, head_hash = v_hash WHERE h.journal = v_journal)
    INSERT INTO :"schema".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
    VALUES (p_id, v_journal, v_journal, p_target, p_action, p_tier, p_effect::json, p_to, v_seq, p_data::json, p_at::timestamptz, p_at::timestamptz);
  END IF;

  IF p_channel IS NOT NULL THEN
    -- Delivered at commit, and only then.
    PERFORM pg_notify(p_channel, p_payload);
  END IF;
  RETURN v_seq::text || ' ' || v_prev || ' ' || v_hash || ' ' || v_journal;
END
$fn$;
