-- Interlock append in one round trip (PostgreSQL).
--
-- An append batch used to cost six round trips (BEGIN, read journals, lock
-- heads, read effects, write, COMMIT); each is a network wait while the
-- journal heads are locked, so it bounds both sequential and concurrent
-- throughput. This function does the whole batch server-side, called as one
-- autocommit statement: it is its own transaction.
--
-- It keeps the rules of src/core/stores/append-plan.ts (the in-memory
-- planner SQLite still uses):
--  - heads are locked in journal order, then effects in id order (the order
--    claim, renew and release use: no deadlocks);
--  - an effect in a journal this call did not lock was created concurrently
--    after we looked: for this batch it does not exist;
--  - compare-and-set: the request's `from` must be the effect's state now
--    (NULL: no effect); fencing: a request naming a lease counts only while
--    that lease is the effect's lease now;
--  - the record hash is record-hash.ts's formula, byte for byte; the data
--    text is the canonical JSON the client computed.
-- The client checks `from -> to` against the lifecycle table before calling
-- (validateAppendRequests); a request passing compare-and-set therefore
-- moves along an allowed transition.
--
-- One row per request, in request order: ok with the record's journal, seq and hashes,
-- or not ok with the effect as it is now (all NULL when it does not exist).

CREATE FUNCTION :"schema".append(
  p_ids         text[],
  p_from        text[],
  p_to          text[],
  p_data        text[],
  p_thread      text[],   -- proposals: the effect's thread (its journal); NULL otherwise
  p_target      text[],
  p_action      text[],
  p_tier        smallint[],
  p_effect      text[],   -- proposals: the effect's canonical JSON
  p_lease_relay text[],
  p_lease_token bigint[],
  p_channel     text[],   -- the NOTIFY channel a written record wakes (notify.ts decides), or NULL
  p_at          text,
  p_genesis     text,
  p_payload     text
) RETURNS TABLE (
  idx        integer,
  ok         boolean,
  journal    text,
  seq        bigint,
  prev_hash  text,
  hash       text,
  effect     json,
  tier       smallint,
  state      text,
  last_seq   bigint,
  detail     json,
  created_at timestamptz,
  updated_at timestamptz
)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v_journals text[];
  v_channels text[] := '{}';
  e          :"schema".effects%ROWTYPE;
  v_found    boolean;
  v_journal  text;
  v_seq      bigint;
  v_prev     text;
  v_hash     text;
  n          integer;
BEGIN
  -- Which journals to lock: a proposal names its own; the rest are looked up
  -- (an effect never changes journal, so this read needs no lock).
  SELECT coalesce(array_agg(DISTINCT j ORDER BY j), '{}') INTO v_journals FROM (
    SELECT unnest(p_thread) AS j
    UNION SELECT x.journal FROM :"schema".effects x WHERE x.id = ANY(p_ids)
  ) s WHERE j IS NOT NULL;

  -- Create-or-lock every head, in journal order.
  WITH locked AS (
    INSERT INTO :"schema".journals AS h (journal, head_seq, head_hash)
    SELECT j, 0, p_genesis FROM unnest(v_journals) AS j ORDER BY j
    ON CONFLICT (journal) DO UPDATE SET head_seq = h.head_seq
    RETURNING 1)
  SELECT count(*) INTO n FROM locked;

  -- Locked so a claim cannot change a lease between the fencing check and the write.
  PERFORM 1 FROM :"schema".effects x WHERE x.id = ANY(p_ids) ORDER BY x.id FOR UPDATE;

  FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
    -- Read each time: earlier requests of this batch are already written.
    SELECT * INTO e FROM :"schema".effects x WHERE x.id = p_ids[i] AND x.journal = ANY(v_journals);
    v_found := FOUND;
    IF (CASE WHEN v_found THEN e.state END) IS DISTINCT FROM p_from[i]
       OR (p_lease_relay[i] IS NOT NULL AND NOT coalesce(
             e.lease_relay <> '' AND e.lease_relay = p_lease_relay[i] AND e.lease_token = p_lease_token[i], false)) THEN
      IF v_found THEN
        RETURN QUERY SELECT i, false, NULL::text, NULL::bigint, NULL::text, NULL::text,
          e.effect, e.tier, e.state, e.last_seq, e.detail, e.created_at, e.updated_at;
      ELSE
        RETURN QUERY SELECT i, false, NULL::text, NULL::bigint, NULL::text, NULL::text,
          NULL::json, NULL::smallint, NULL::text, NULL::bigint, NULL::json, NULL::timestamptz, NULL::timestamptz;
      END IF;
      CONTINUE;
    END IF;

    v_journal := CASE WHEN v_found THEN e.journal ELSE p_thread[i] END;
    SELECT h.head_seq + 1, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journal;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'append: journal % was not locked', v_journal;
    END IF;
    v_hash := encode(sha256(convert_to(
      v_journal || E'\n' || v_seq::text || E'\n' || p_ids[i] || E'\n' || p_to[i] || E'\n' || p_at || E'\n' || p_data[i] || E'\n' || v_prev,
      'UTF8')), 'hex');

    INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
    VALUES (v_journal, v_seq, p_ids[i], p_to[i], p_at, p_data[i], v_prev, v_hash);
    UPDATE :"schema".journals SET head_seq = v_seq, head_hash = v_hash WHERE journal = v_journal;
    IF v_found THEN
      UPDATE :"schema".effects
        SET state = p_to[i], last_seq = v_seq, detail = p_data[i]::json, updated_at = p_at::timestamptz
        WHERE id = p_ids[i] AND last_seq = e.last_seq;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n <> 1 THEN
        RAISE EXCEPTION 'effect % changed under an append that held its journal''s lock; something writes the journal without it', p_ids[i];
      END IF;
    ELSE
      INSERT INTO :"schema".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
      VALUES (p_ids[i], v_journal, v_journal, p_target[i], p_action[i], p_tier[i], p_effect[i]::json, p_to[i], v_seq,
              p_data[i]::json, p_at::timestamptz, p_at::timestamptz);
    END IF;
    IF p_channel[i] IS NOT NULL AND NOT (p_channel[i] = ANY(v_channels)) THEN
      v_channels := v_channels || p_channel[i];
    END IF;
    RETURN QUERY SELECT i, true, v_journal, v_seq, v_prev, v_hash,
      NULL::json, NULL::smallint, NULL::text, NULL::bigint, NULL::json, NULL::timestamptz, NULL::timestamptz;
  END LOOP;

  -- Delivered at commit, and only then: a listener never hears of a write that did not happen.
  PERFORM pg_notify(c, p_payload) FROM unnest(v_channels) AS c;
END
$fn$;
