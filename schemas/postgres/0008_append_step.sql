-- Interlock append of one request, answered in one text value (PostgreSQL).
--
-- A sequential caller (a gate stepping one effect: four appends per effect,
-- each its own durable commit) waits for every append in turn, so what a
-- call costs besides its writes counts four times per effect. 0005's
-- append_one() answers with a set of 13 columns: the function fills a
-- tuplestore, the client parses a row description and a row each time.
-- Measured with synchronous_commit off, an append_one() that wrote nothing
-- (compare-and-set lost) still cost ~90 µs more than a one-row INSERT.
--
-- append_step() takes append_one()'s arguments and returns text:
--   '<seq> <prev_hash> <hash> <journal>' when the record was written
--   (hashes are 64 hex digits; the journal, last, may contain spaces);
--   NULL when compare-and-set or fencing lost: nothing was written, and the
--   caller reads the effect as it stands now if it wants it.
-- Same locking order (the effect, then its head), checks, hash formula and
-- notification as append_one(), which stays for processes of the previous
-- release still running while the schema is upgraded.

CREATE FUNCTION :"schema".append_step(
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
  e         :"schema".effects%ROWTYPE;
  v_journal text;
  v_seq     bigint;
  v_prev    text;
  v_hash    text;
  n         integer;
BEGIN
  IF p_thread IS NULL THEN
    -- A move: the effect first (its lock comes before its head's, as in append()).
    SELECT * INTO e FROM :"schema".effects x WHERE x.id = p_id FOR UPDATE;
    IF NOT FOUND OR e.state IS DISTINCT FROM p_from
       OR (p_lease_relay IS NOT NULL AND NOT coalesce(e.lease_relay <> '' AND e.lease_relay = p_lease_relay AND e.lease_token = p_lease_token, false)) THEN
      RETURN NULL;
    END IF;
    v_journal := e.journal;
  ELSIF p_lease_relay IS NOT NULL THEN
    -- A proposal carrying a lease: no effect holds it.
    RETURN NULL;
  ELSE
    v_journal := p_thread;
  END IF;

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

  -- A proposal, checked under its journal's lock: one proposed concurrently is committed by now, and wins.
  IF p_thread IS NOT NULL AND EXISTS (SELECT 1 FROM :"schema".effects x WHERE x.id = p_id) THEN
    RETURN NULL;
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
      WHERE x.id = p_id AND x.last_seq = e.last_seq;
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
