-- Interlock appends (PostgreSQL): append() and append_each(), the baseline's
-- batch appends (0001_baseline.sql, released: not edited), redefined with the
-- guard append_chain() and append_chains() (0004_append_chain.sql) have
-- against a journal whose head row was deleted by hand. Every effect's
-- journal has a head row, and no append deletes one; one deleted by hand
-- (before the batch, or while it waited for the head's lock) made
--   - append() write the batch's records into that journal numbered after the
--     next journal's head and linked to its hash (the heads were read into
--     arrays by one statement, in journal order, and the vanished one's place
--     went to the next), and answer them written;
--   - append() and append_each(), with the head already missing, start the
--     journal again at its genesis over the records it holds and fail on a
--     duplicate key (23505), failing every caller of a group commit with it.
-- Now a batch moving an effect whose journal has no head is refused, naming
-- the effect, with append_chain()'s message; nothing is written. A batch
-- with no chain (a relay's outcome batch, several callers' single requests
-- joined by group commit) takes append(); one naming an effect twice,
-- append_each() (test/integration/stores/postgres-chain-faults.test.ts).
-- Arguments, answers, locking order and plans are the baseline's: CREATE OR
-- REPLACE keeps each function's owner and grants.
--
-- lock: none: replaces two functions; no table is touched.

-- append_each(), as in the baseline.
CREATE OR REPLACE FUNCTION :"schema".append_each(
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
  n_req      integer := coalesce(array_length(p_ids, 1), 0);
  v_req_j    text[] := p_thread;   -- each request's journal, as far as known before locking
  v_lk       boolean[];            -- the request's effect was locked (it existed) before the heads
  v_created  text[] := '{}';       -- effects this batch proposed
  v_journals text[];
  v_hseq     bigint[] := '{}';     -- heads of v_journals, as this batch extends them
  v_hhash    text[] := '{}';
  v_dirty    boolean[] := '{}';
  v_channels text[] := '{}';
  r          record;
  e          :"schema".effects%ROWTYPE;
  v_found    boolean;
  v_journal  text;
  v_k        integer;
  v_seq      bigint;
  v_prev     text;
  v_hash     text;
  n          integer;
BEGIN
  -- Lock the effects the batch moves, in id order, learning their journals
  -- (a proposal names its own; its effect, if it exists already, is only read).
  FOR r IN SELECT s.i, p_ids[s.i] AS id FROM generate_subscripts(p_ids, 1) AS s(i) WHERE p_thread[s.i] IS NULL ORDER BY p_ids[s.i] LOOP
    SELECT x.journal INTO v_journal FROM :"schema".effects x WHERE x.id = r.id FOR UPDATE;
    IF FOUND THEN
      v_req_j[r.i] := v_journal;
      v_lk[r.i] := true;
    END IF;
  END LOOP;
  SELECT coalesce(array_agg(DISTINCT j ORDER BY j), '{}') INTO v_journals FROM unnest(v_req_j) AS j WHERE j IS NOT NULL;

  -- Then every head, in journal order, creating the missing ones. A head
  -- another transaction is creating is waited for (unique index), then locked.
  FOR k IN 1 .. coalesce(array_length(v_journals, 1), 0) LOOP
    SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
    IF NOT FOUND THEN
      -- A journal holding an effect the batch moves has a head: one without (missing, or deleted while this
      -- waited for its lock) was changed by hand. Refused, as append_chain() refuses it, rather than started
      -- again at its genesis over the records it holds (a duplicate key, failing every caller of the batch).
      SELECT p_ids[s.i] INTO v_journal FROM generate_subscripts(p_ids, 1) AS s(i)
        WHERE coalesce(v_lk[s.i], false) AND v_req_j[s.i] = v_journals[k] LIMIT 1;
      IF FOUND THEN
        RAISE EXCEPTION 'effect %''s journal has no head row; the journal was changed by hand', v_journal;
      END IF;
      INSERT INTO :"schema".journals AS h (journal, head_seq, head_hash) VALUES (v_journals[k], 0, p_genesis) ON CONFLICT (journal) DO NOTHING;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n = 1 THEN
        v_seq := 0;
        v_prev := p_genesis;
      ELSE
        SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
      END IF;
    END IF;
    v_hseq[k] := v_seq;
    v_hhash[k] := v_prev;
    v_dirty[k] := false;
  END LOOP;

  FOR i IN 1 .. n_req LOOP
    -- Read each time: earlier requests of this batch are already written.
    SELECT * INTO e FROM :"schema".effects x WHERE x.id = p_ids[i];
    -- One that appeared after we locked (created concurrently) is not ours to move: here it does not exist.
    v_found := FOUND AND (coalesce(v_lk[i], false) OR p_from[i] IS NULL OR p_ids[i] = ANY(v_created));
    IF (CASE WHEN v_found THEN e.state END) IS DISTINCT FROM p_from[i]
       OR (p_lease_relay[i] IS NOT NULL AND NOT coalesce(
             e.lease_relay <> '' AND e.lease_relay = p_lease_relay[i] AND e.lease_token = p_lease_token[i], false)) THEN
      idx := i; ok := false; journal := NULL; seq := NULL; prev_hash := NULL; hash := NULL;
      IF v_found THEN
        effect := e.effect; tier := e.tier; state := e.state; last_seq := e.last_seq;
        detail := e.detail; created_at := e.created_at; updated_at := e.updated_at;
      ELSE
        effect := NULL; tier := NULL; state := NULL; last_seq := NULL; detail := NULL; created_at := NULL; updated_at := NULL;
      END IF;
      RETURN NEXT;
      CONTINUE;
    END IF;

    v_journal := CASE WHEN v_found THEN e.journal ELSE p_thread[i] END;
    v_k := array_position(v_journals, v_journal);
    IF v_k IS NULL THEN
      RAISE EXCEPTION 'append: journal % was not locked', v_journal;
    END IF;
    v_seq := v_hseq[v_k] + 1;
    v_prev := v_hhash[v_k];
    v_hash := encode(sha256(convert_to(
      v_journal || E'\n' || v_seq::text || E'\n' || p_ids[i] || E'\n' || p_to[i] || E'\n' || p_at || E'\n' || p_data[i] || E'\n' || v_prev,
      'UTF8')), 'hex');

    INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
    VALUES (v_journal, v_seq, p_ids[i], p_to[i], p_at, p_data[i], v_prev, v_hash);
    v_hseq[v_k] := v_seq;
    v_hhash[v_k] := v_hash;
    v_dirty[v_k] := true;
    IF v_found THEN
      UPDATE :"schema".effects
        SET state = p_to[i], last_seq = v_seq, detail = p_data[i]::json, updated_at = p_at::timestamptz
        WHERE id = p_ids[i] AND last_seq = e.last_seq;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n <> 1 THEN
        RAISE EXCEPTION 'effect % changed under an append that held its lock; something writes it without one', p_ids[i];
      END IF;
    ELSE
      INSERT INTO :"schema".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
      VALUES (p_ids[i], v_journal, v_journal, p_target[i], p_action[i], p_tier[i], p_effect[i]::json, p_to[i], v_seq,
              p_data[i]::json, p_at::timestamptz, p_at::timestamptz);
      v_created := v_created || p_ids[i];
    END IF;
    IF p_channel[i] IS NOT NULL AND NOT (p_channel[i] = ANY(v_channels)) THEN
      v_channels := v_channels || p_channel[i];
    END IF;
    idx := i; ok := true; journal := v_journal; seq := v_seq; prev_hash := v_prev; hash := v_hash;
    effect := NULL; tier := NULL; state := NULL; last_seq := NULL; detail := NULL; created_at := NULL; updated_at := NULL;
    RETURN NEXT;
  END LOOP;

  -- Each head written once, however many records the batch chained onto it.
  FOR k IN 1 .. coalesce(array_length(v_journals, 1), 0) LOOP
    IF v_dirty[k] THEN
      UPDATE :"schema".journals SET head_seq = v_hseq[k], head_hash = v_hhash[k] WHERE journal = v_journals[k];
    END IF;
  END LOOP;

  -- Delivered at commit, and only then: a listener never hears of a write that did not happen.
  FOR k IN 1 .. coalesce(array_length(v_channels, 1), 0) LOOP
    PERFORM pg_notify(v_channels[k], p_payload);
  END LOOP;
END
$fn$;

-- append(), as in the baseline.
CREATE OR REPLACE FUNCTION :"schema".append(
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
LANGUAGE plpgsql
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $fn$
#variable_conflict use_column
DECLARE
  n_req      integer := coalesce(array_length(p_ids, 1), 0);
  -- per request: what was found, and what this call decided
  c_found    boolean[] := array_fill(false, ARRAY[n_req]);
  c_state    text[];
  c_lrelay   text[];
  c_ltoken   bigint[];
  c_lseq     bigint[];
  v_req_j    text[] := p_thread;
  r_ok       boolean[] := array_fill(false, ARRAY[n_req]);
  r_journal  text[];
  r_seq      bigint[];
  r_prev     text[];
  r_hash     text[];
  -- rows to write
  m_id text[]; m_to text[]; m_seq bigint[]; m_data text[]; m_prev_seq bigint[]; nm integer := 0;
  p_i integer[]; np integer := 0;
  -- heads, parallel to v_journals
  v_journals text[];
  v_hseq     bigint[];
  v_hhash    text[];
  v_dirty    boolean[];
  v_channels text[] := '{}';
  a_i integer[]; a_journal text[]; a_state text[]; a_lrelay text[]; a_ltoken bigint[]; a_lseq bigint[];
  v_found    boolean;
  v_journal  text;
  v_k        integer;
  v_seq      bigint;
  v_prev     text;
  v_hash     text;
  j          integer;
  n          integer;
BEGIN
  IF n_req = 0 THEN
    RETURN;
  END IF;
  IF (SELECT count(DISTINCT x) FROM unnest(p_ids) AS x) < n_req THEN
    RETURN QUERY SELECT * FROM :"schema".append_each(p_ids, p_from, p_to, p_data, p_thread, p_target, p_action, p_tier,
      p_effect, p_lease_relay, p_lease_token, p_channel, p_at, p_genesis, p_payload);
    RETURN;
  END IF;

  -- 1. The effects moved, locked in id order; the lock returns their latest version.
  SELECT array_agg(q.i), array_agg(q.journal), array_agg(q.state), array_agg(q.lease_relay), array_agg(q.lease_token), array_agg(q.last_seq)
    INTO a_i, a_journal, a_state, a_lrelay, a_ltoken, a_lseq
    FROM (SELECT s.i, x.journal, x.state, x.lease_relay, x.lease_token, x.last_seq
          FROM generate_subscripts(p_ids, 1) AS s(i) JOIN :"schema".effects x ON x.id = p_ids[s.i]
          WHERE p_thread[s.i] IS NULL ORDER BY x.id FOR UPDATE OF x) q;
  FOR k IN 1 .. coalesce(array_length(a_i, 1), 0) LOOP
    j := a_i[k];
    c_found[j] := true;
    v_req_j[j] := a_journal[k];
    c_state[j] := a_state[k];
    c_lrelay[j] := a_lrelay[k];
    c_ltoken[j] := a_ltoken[k];
    c_lseq[j] := a_lseq[k];
  END LOOP;

  -- 2. Their heads, in journal order; all in one statement when all exist.
  SELECT coalesce(array_agg(DISTINCT x ORDER BY x), '{}') INTO v_journals FROM unnest(v_req_j) AS x WHERE x IS NOT NULL;
  v_dirty := array_fill(false, ARRAY[coalesce(array_length(v_journals, 1), 0)]);
  SELECT count(*) INTO n FROM :"schema".journals h WHERE h.journal = ANY(v_journals);
  IF n = coalesce(array_length(v_journals, 1), 0) THEN
    SELECT coalesce(array_agg(q.head_seq ORDER BY q.journal), '{}'), coalesce(array_agg(q.head_hash ORDER BY q.journal), '{}') INTO v_hseq, v_hhash
      FROM (SELECT h.journal, h.head_seq, h.head_hash FROM :"schema".journals h
            WHERE h.journal = ANY(v_journals) ORDER BY h.journal FOR UPDATE) q;
  END IF;
  -- Some heads are new, or one counted above was deleted before its lock came (by hand: no append deletes
  -- one) and is missing from the arrays, whose places would then be the next journals' heads: one at a
  -- time, in order, creating the missing ones (as append_each() does).
  IF coalesce(cardinality(v_hseq), -1) <> coalesce(cardinality(v_journals), 0) THEN
    v_hseq := '{}';
    v_hhash := '{}';
    FOR k IN 1 .. cardinality(v_journals) LOOP
      SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
      IF NOT FOUND THEN
        -- A journal holding an effect the batch moves has a head: one without was changed by hand. Refused, as
        -- append_chain() refuses it, rather than started again at its genesis over the records it holds.
        SELECT p_ids[s.i] INTO v_prev FROM generate_subscripts(p_ids, 1) AS s(i)
          WHERE p_thread[s.i] IS NULL AND c_found[s.i] AND v_req_j[s.i] = v_journals[k] LIMIT 1;
        IF FOUND THEN
          RAISE EXCEPTION 'effect %''s journal has no head row; the journal was changed by hand', v_prev;
        END IF;
        INSERT INTO :"schema".journals AS h (journal, head_seq, head_hash) VALUES (v_journals[k], 0, p_genesis) ON CONFLICT (journal) DO NOTHING;
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n = 1 THEN
          v_seq := 0;
          v_prev := p_genesis;
        ELSE
          SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
        END IF;
      END IF;
      v_hseq[k] := v_seq;
      v_hhash[k] := v_prev;
    END LOOP;
  END IF;

  -- 3. The effects proposed, read under their journal's lock: one proposed concurrently is committed by now, and wins.
  FOR j IN SELECT s.i FROM generate_subscripts(p_ids, 1) AS s(i) JOIN :"schema".effects x ON x.id = p_ids[s.i]
           WHERE p_thread[s.i] IS NOT NULL LOOP
    c_found[j] := true;
  END LOOP;

  -- 4. Checks, chain and hashes, in request order.
  FOR i IN 1 .. n_req LOOP
    v_found := c_found[i];
    IF p_thread[i] IS NOT NULL THEN
      IF v_found OR p_lease_relay[i] IS NOT NULL THEN CONTINUE; END IF;
    ELSIF NOT v_found OR c_state[i] IS DISTINCT FROM p_from[i]
       OR (p_lease_relay[i] IS NOT NULL AND NOT coalesce(
             c_lrelay[i] <> '' AND c_lrelay[i] = p_lease_relay[i] AND c_ltoken[i] = p_lease_token[i], false)) THEN
      CONTINUE;
    END IF;
    v_journal := v_req_j[i];
    v_k := array_position(v_journals, v_journal);
    v_seq := v_hseq[v_k] + 1;
    v_prev := v_hhash[v_k];
    v_hash := encode(sha256(convert_to(
      v_journal || E'\n' || v_seq::text || E'\n' || p_ids[i] || E'\n' || p_to[i] || E'\n' || p_at || E'\n' || p_data[i] || E'\n' || v_prev,
      'UTF8')), 'hex');
    v_hseq[v_k] := v_seq;
    v_hhash[v_k] := v_hash;
    v_dirty[v_k] := true;
    r_ok[i] := true;
    r_journal[i] := v_journal;
    r_seq[i] := v_seq;
    r_prev[i] := v_prev;
    r_hash[i] := v_hash;
    IF p_thread[i] IS NULL THEN
      nm := nm + 1;
      m_id[nm] := p_ids[i];
      m_to[nm] := p_to[i];
      m_seq[nm] := v_seq;
      m_data[nm] := p_data[i];
      m_prev_seq[nm] := c_lseq[i];
    ELSE
      np := np + 1;
      p_i[np] := i;
    END IF;
    IF p_channel[i] IS NOT NULL AND NOT (p_channel[i] = ANY(v_channels)) THEN
      v_channels := v_channels || p_channel[i];
    END IF;
  END LOOP;

  -- 5. The writes.
  INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
  SELECT r_journal[s.i], r_seq[s.i], p_ids[s.i], p_to[s.i], p_at, p_data[s.i], r_prev[s.i], r_hash[s.i]
  FROM generate_subscripts(p_ids, 1) AS s(i) WHERE r_ok[s.i] ORDER BY s.i;
  IF nm > 0 THEN
    UPDATE :"schema".effects x
      SET state = u.st, last_seq = u.sq, detail = u.dt::json, updated_at = p_at::timestamptz
      FROM unnest(m_id, m_to, m_seq, m_data, m_prev_seq) AS u(id, st, sq, dt, prev_seq)
      WHERE x.id = u.id AND x.last_seq = u.prev_seq;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> nm THEN
      RAISE EXCEPTION 'append: % of % effects changed under an append that held their locks; something writes them without one', nm - n, nm;
    END IF;
  END IF;
  IF np > 0 THEN
    INSERT INTO :"schema".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
    SELECT p_ids[k], r_journal[k], r_journal[k], p_target[k], p_action[k], p_tier[k], p_effect[k]::json, p_to[k], r_seq[k],
           p_data[k]::json, p_at::timestamptz, p_at::timestamptz
    FROM unnest(p_i) AS k;
  END IF;
  UPDATE :"schema".journals h SET head_seq = u.sq, head_hash = u.hs
    FROM unnest(v_journals, v_hseq, v_hhash, v_dirty) AS u(jn, sq, hs, dirty)
    WHERE h.journal = u.jn AND u.dirty;

  -- Delivered at commit, and only then: a listener never hears of a write that did not happen.
  FOR k IN 1 .. coalesce(array_length(v_channels, 1), 0) LOOP
    PERFORM pg_notify(v_channels[k], p_payload);
  END LOOP;

  -- 6. One row per request: the record written, or the effect as it stands (NULLs when there is none).
  RETURN QUERY
  SELECT s.i, r_ok[s.i], r_journal[s.i], r_seq[s.i], r_prev[s.i], r_hash[s.i],
         x.effect, x.tier, x.state, x.last_seq, x.detail, x.created_at, x.updated_at
  FROM generate_subscripts(p_ids, 1) AS s(i)
  LEFT JOIN :"schema".effects x ON NOT r_ok[s.i] AND c_found[s.i] AND x.id = p_ids[s.i]
  ORDER BY s.i;
END
$fn$;
