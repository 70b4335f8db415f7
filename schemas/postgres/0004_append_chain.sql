-- Interlock chained append (PostgreSQL): the states of one effect that are
-- made durable together (Store.append's chain: a proposal with AUTHORIZED and
-- DISPATCHED or REJECTED, or AUTHORIZED with DISPATCHED) as one statement;
-- a batch holding several chains (a group commit's: a gate's callers, a
-- relay's claimed batch) set-based, each whole or not at all; and
-- append_step(), the one-request append, with fewer statements per call.
--
-- lock: none: adds two functions and replaces one; no table is touched.
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

-- append_chains(): a batch holding chains (group commit joins several callers'
-- chains and single requests in one call), set-based and all or nothing per
-- chain, instead of append_each()'s loop under a statement that rolls the
-- whole batch back when a chain comes out partly written. Its arguments are
-- append()'s, with p_chained: request i is chained to request i - 1
-- (Store.append: the next state of the same effect). The rules are
-- append()'s and planAppend()'s (src/core/stores/append-plan.ts):
--   1. the effects the batch moves are locked in id order, then the heads of
--      their journals and of the proposals' in journal order;
--   2. the effects proposed are looked for under their journal's lock;
--   3. in request order, each chain (a request and those chained to it;
--      a request chained to none is a chain of one) is checked as a whole
--      against the effect as the requests before it left it: compare-and-set
--      on its first state, fencing on every request; it is written whole, or
--      not at all;
--   4. records in one INSERT; each effect's row written once, at its last
--      state in the batch (one UPDATE for those that existed, one INSERT for
--      those proposed); each head once;
--   5. the channels the written requests name are notified at commit, each
--      once. The client names one only on a chain's last request (the state
--      the chain leaves its effect in: AUTHORIZED chained on to DISPATCHED
--      wakes no relay), and none at all for a batch of several effects,
--      which it notifies after the commit, in a statement of its own
--      (src/core/stores/postgres/append.ts: why);
--   6. one row per request, in request order, as append() answers: a
--      request that lost, with its effect as the requests before it left
--      it (as append_each() and the planner answer;
--      test/integration/stores/chain-batch-alike.test.ts).
-- Two chains of one effect in a batch (two callers racing on it, joined by
-- group commit) are checked in turn, the second against the state the first
-- left: one of them loses, whole, and is answered with the effect as the
-- first left it. A move's journal without a head row was changed by hand:
-- the batch is refused, naming the effect, as append_chain() refuses it. A chained request that does not continue the request before it
-- (another effect, or a proposal) is a caller's bug: it raises, and nothing
-- is written; one whose `from` is not the state the request before it moves
-- to fails its chain.
CREATE FUNCTION :"schema".append_chains(
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
  p_chained     boolean[],
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
  n_req      integer := coalesce(cardinality(p_ids), 0);
  -- per request: its effect's slot (the first request naming the same effect)
  r_slot     integer[];
  r_move     integer[];
  r_ok       boolean[] := array_fill(false, ARRAY[n_req]);
  r_journal  text[];
  r_seq      bigint[];
  r_prev     text[];
  r_hash     text[];
  r_asof     integer[];   -- a request that lost: the last request written for its effect before it (NULL: none)
  -- per slot: the effect as the batch finds it (locked, or looked for), then as the batch leaves it
  s_found    boolean[] := array_fill(false, ARRAY[n_req]);
  s_journal  text[];
  s_state    text[];
  s_lrelay   text[];
  s_ltoken   bigint[];
  s_lseq     bigint[];
  s_exists   boolean[] := array_fill(false, ARRAY[n_req]);
  s_last     integer[];   -- the last request written for it
  s_new      integer[];   -- the proposal that created it in this batch
  s_before   text[];      -- as locked, before the batch: state, detail and time, for what a loser is told
  s_bdetail  text[];
  s_bupdated timestamptz[];
  -- heads, parallel to v_journals
  v_journals text[];
  v_hseq     bigint[];
  v_hhash    text[];
  v_dirty    boolean[];
  v_channels text[] := '{}';
  a_i integer[]; a_journal text[]; a_state text[]; a_lrelay text[]; a_ltoken bigint[]; a_lseq bigint[]; a_detail text[]; a_updated timestamptz[];
  u_id text[]; u_to text[]; u_seq bigint[]; u_data text[]; u_prev_seq bigint[]; nu integer := 0;
  c_i integer[]; nc integer := 0;
  v_s        integer;
  v_end      integer;
  v_pass     boolean;
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
  IF array_ndims(p_ids) <> 1 OR array_lower(p_ids, 1) <> 1 OR coalesce(cardinality(p_chained), -1) <> n_req OR coalesce(cardinality(p_from), -1) <> n_req
     OR coalesce(cardinality(p_to), -1) <> n_req OR coalesce(cardinality(p_data), -1) <> n_req OR coalesce(cardinality(p_thread), -1) <> n_req THEN
    RAISE EXCEPTION 'append_chains: the argument arrays must be one-dimensional, from 1, and of one length' USING ERRCODE = '22023';
  END IF;
  FOR i IN 1 .. n_req LOOP
    IF coalesce(p_chained[i], false) AND (i = 1 OR p_ids[i] IS DISTINCT FROM p_ids[i - 1] OR p_thread[i] IS NOT NULL) THEN
      RAISE EXCEPTION 'append_chains: request % is chained but does not continue a request for effect %', i, p_ids[i] USING ERRCODE = '22023';
    END IF;
  END LOOP;
  -- Each request's slot, and the first request that moves its effect (which stands for the effect when locking).
  SELECT array_agg(q.slot ORDER BY q.i), array_agg(q.first_move ORDER BY q.i) INTO r_slot, r_move
    FROM (SELECT s.i, min(s.i) OVER w AS slot, min(s.i) FILTER (WHERE p_thread[s.i] IS NULL) OVER w AS first_move
          FROM generate_subscripts(p_ids, 1) AS s(i) WINDOW w AS (PARTITION BY p_ids[s.i])) q;

  -- 1. The effects moved, each once, locked in id order; the lock returns their latest version.
  SELECT array_agg(q.slot), array_agg(q.journal), array_agg(q.state), array_agg(q.lease_relay), array_agg(q.lease_token), array_agg(q.last_seq),
         array_agg(q.detail), array_agg(q.updated_at)
    INTO a_i, a_journal, a_state, a_lrelay, a_ltoken, a_lseq, a_detail, a_updated
    FROM (SELECT r_slot[s.i] AS slot, x.journal, x.state, x.lease_relay, x.lease_token, x.last_seq, x.detail::text AS detail, x.updated_at
          FROM generate_subscripts(p_ids, 1) AS s(i) JOIN :"schema".effects x ON x.id = p_ids[s.i]
          WHERE r_move[s.i] = s.i ORDER BY x.id FOR UPDATE OF x) q;
  FOR k IN 1 .. coalesce(cardinality(a_i), 0) LOOP
    j := a_i[k];
    s_found[j] := true;
    s_exists[j] := true;
    s_journal[j] := a_journal[k];
    s_state[j] := a_state[k];
    s_lrelay[j] := a_lrelay[k];
    s_ltoken[j] := a_ltoken[k];
    s_lseq[j] := a_lseq[k];
    s_before[j] := a_state[k];
    s_bdetail[j] := a_detail[k];
    s_bupdated[j] := a_updated[k];
  END LOOP;

  -- 2. The heads of their journals and of the proposals', in journal order, creating the missing ones.
  SELECT coalesce(array_agg(DISTINCT x ORDER BY x), '{}') INTO v_journals
    FROM (SELECT s_journal[r_slot[s.i]] AS x FROM generate_subscripts(p_ids, 1) AS s(i)
          UNION ALL SELECT t FROM unnest(p_thread) AS t) u WHERE x IS NOT NULL;
  v_hseq := '{}';
  v_hhash := '{}';
  v_dirty := array_fill(false, ARRAY[coalesce(cardinality(v_journals), 0)]);
  SELECT count(*) INTO n FROM :"schema".journals h WHERE h.journal = ANY(v_journals);
  IF n = coalesce(cardinality(v_journals), 0) THEN
    SELECT coalesce(array_agg(q.head_seq ORDER BY q.journal), '{}'), coalesce(array_agg(q.head_hash ORDER BY q.journal), '{}') INTO v_hseq, v_hhash
      FROM (SELECT h.journal, h.head_seq, h.head_hash FROM :"schema".journals h
            WHERE h.journal = ANY(v_journals) ORDER BY h.journal FOR UPDATE) q;
  END IF;
  -- Some heads are new, or one counted above was deleted before its lock came (by hand: no append deletes
  -- one) and is missing from the arrays, whose places would then be the next journals' heads: one at a
  -- time, in order.
  IF cardinality(v_hseq) <> coalesce(cardinality(v_journals), 0) THEN
    v_hseq := '{}';
    v_hhash := '{}';
    FOR k IN 1 .. cardinality(v_journals) LOOP
      SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
      IF NOT FOUND THEN
        -- A journal holding an effect the batch moves has a head: one without was changed by hand. Refused, as
        -- append_chain() refuses it, rather than started again at its genesis over the records it holds.
        SELECT p_ids[s.i] INTO v_prev FROM generate_subscripts(p_ids, 1) AS s(i)
          WHERE s_found[r_slot[s.i]] AND s_journal[r_slot[s.i]] = v_journals[k] LIMIT 1;
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

  -- 3. The effects proposed and not locked above, looked for under their journal's lock: one proposed
  --    concurrently is committed by now, and wins. (Not locked: a proposal only needs to know it exists.)
  FOR j IN SELECT DISTINCT r_slot[s.i] FROM generate_subscripts(p_ids, 1) AS s(i) JOIN :"schema".effects x ON x.id = p_ids[s.i]
           WHERE p_thread[s.i] IS NOT NULL LOOP
    IF NOT s_found[j] THEN
      s_exists[j] := true;
      s_state[j] := NULL;   -- not ours to move in this batch: only proposals (which lose) may name it
    END IF;
  END LOOP;

  -- 4. Chain by chain, in request order: checked as a whole against the effect as the batch has left it so far.
  j := 1;
  WHILE j <= n_req LOOP
    v_end := j;
    WHILE v_end < n_req AND coalesce(p_chained[v_end + 1], false) LOOP
      v_end := v_end + 1;
    END LOOP;
    v_s := r_slot[j];
    IF p_thread[j] IS NOT NULL THEN
      -- A proposal: no effect of that id, here or in the store.
      v_pass := NOT s_exists[v_s];
    ELSE
      -- A move: an effect this batch locked (or created), in the state the request believes.
      v_pass := (s_found[v_s] OR s_new[v_s] IS NOT NULL) AND s_state[v_s] IS NOT DISTINCT FROM p_from[j];
    END IF;
    FOR i IN j .. v_end LOOP
      EXIT WHEN NOT v_pass;
      -- Each request chained on continues the state the one before it moves to.
      IF i > j AND p_from[i] IS DISTINCT FROM p_to[i - 1] THEN
        v_pass := false;
      END IF;
      IF v_pass AND p_lease_relay[i] IS NOT NULL THEN
        -- Fencing: a lease counts only while it is the effect's lease now; a new effect has none.
        v_pass := s_found[v_s] AND coalesce(s_lrelay[v_s] <> '' AND s_lrelay[v_s] = p_lease_relay[i] AND s_ltoken[v_s] = p_lease_token[i], false);
      END IF;
    END LOOP;
    IF NOT v_pass THEN
      -- Told the effect as the requests before it left it (append_each() and the planner answer so).
      FOR i IN j .. v_end LOOP
        r_asof[i] := s_last[v_s];
      END LOOP;
    END IF;
    IF v_pass THEN
      IF p_thread[j] IS NOT NULL THEN
        s_journal[v_s] := p_thread[j];
        s_new[v_s] := j;
        s_exists[v_s] := true;
      END IF;
      v_k := array_position(v_journals, s_journal[v_s]);
      FOR i IN j .. v_end LOOP
        v_seq := v_hseq[v_k] + 1;
        v_prev := v_hhash[v_k];
        v_hash := encode(sha256(convert_to(
          s_journal[v_s] || E'\n' || v_seq::text || E'\n' || p_ids[i] || E'\n' || p_to[i] || E'\n' || p_at || E'\n' || p_data[i] || E'\n' || v_prev,
          'UTF8')), 'hex');
        v_hseq[v_k] := v_seq;
        v_hhash[v_k] := v_hash;
        v_dirty[v_k] := true;
        r_ok[i] := true;
        r_journal[i] := s_journal[v_s];
        r_seq[i] := v_seq;
        r_prev[i] := v_prev;
        r_hash[i] := v_hash;
        s_state[v_s] := p_to[i];
        s_last[v_s] := i;
        IF p_channel[i] IS NOT NULL AND NOT (p_channel[i] = ANY(v_channels)) THEN
          v_channels := v_channels || p_channel[i];
        END IF;
      END LOOP;
    END IF;
    j := v_end + 1;
  END LOOP;

  -- 5. The writes: every record; each effect's row once, at its last state; each head once.
  INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
  SELECT r_journal[s.i], r_seq[s.i], p_ids[s.i], p_to[s.i], p_at, p_data[s.i], r_prev[s.i], r_hash[s.i]
  FROM generate_subscripts(p_ids, 1) AS s(i) WHERE r_ok[s.i] ORDER BY s.i;
  FOR k IN 1 .. n_req LOOP
    CONTINUE WHEN s_last[k] IS NULL;
    IF s_new[k] IS NULL THEN
      nu := nu + 1;
      u_id[nu] := p_ids[k];
      u_to[nu] := p_to[s_last[k]];
      u_seq[nu] := r_seq[s_last[k]];
      u_data[nu] := p_data[s_last[k]];
      u_prev_seq[nu] := s_lseq[k];
    ELSE
      nc := nc + 1;
      c_i[nc] := k;
    END IF;
  END LOOP;
  IF nu > 0 THEN
    UPDATE :"schema".effects x
      SET state = u.st, last_seq = u.sq, detail = u.dt::json, updated_at = p_at::timestamptz
      FROM unnest(u_id, u_to, u_seq, u_data, u_prev_seq) AS u(id, st, sq, dt, prev_seq)
      WHERE x.id = u.id AND x.last_seq = u.prev_seq;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> nu THEN
      RAISE EXCEPTION 'append: % of % effects changed under an append that held their locks; something writes them without one', nu - n, nu;
    END IF;
  END IF;
  IF nc > 0 THEN
    INSERT INTO :"schema".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
    SELECT p_ids[k], s_journal[k], s_journal[k], p_target[s_new[k]], p_action[s_new[k]], p_tier[s_new[k]], p_effect[s_new[k]]::json,
           p_to[s_last[k]], r_seq[s_last[k]], p_data[s_last[k]]::json, p_at::timestamptz, p_at::timestamptz
    FROM unnest(c_i) AS k;
  END IF;
  UPDATE :"schema".journals h SET head_seq = u.sq, head_hash = u.hs
    FROM unnest(v_journals, v_hseq, v_hhash, v_dirty) AS u(jn, sq, hs, dirty)
    WHERE h.journal = u.jn AND u.dirty;

  -- Delivered at commit, and only then: a listener never hears of a write that did not happen.
  FOR k IN 1 .. cardinality(v_channels) LOOP
    PERFORM pg_notify(v_channels[k], p_payload);
  END LOOP;

  -- 6. One row per request: the record written, or the effect as the requests before it left it: its last
  --    state written by the batch so far, else as the batch found it (NULLs when there was none yet).
  RETURN QUERY
  SELECT s.i, r_ok[s.i], r_journal[s.i], r_seq[s.i], r_prev[s.i], r_hash[s.i], x.effect, x.tier,
         CASE WHEN a.asof IS NOT NULL THEN p_to[a.asof] WHEN s_found[a.slot] THEN s_before[a.slot] ELSE x.state END,
         CASE WHEN a.asof IS NOT NULL THEN r_seq[a.asof] WHEN s_found[a.slot] THEN s_lseq[a.slot] ELSE x.last_seq END,
         CASE WHEN a.asof IS NOT NULL THEN p_data[a.asof]::json WHEN s_found[a.slot] THEN s_bdetail[a.slot]::json ELSE x.detail END,
         x.created_at,
         CASE WHEN a.asof IS NOT NULL THEN p_at::timestamptz WHEN s_found[a.slot] THEN s_bupdated[a.slot] ELSE x.updated_at END
  FROM generate_subscripts(p_ids, 1) AS s(i)
  CROSS JOIN LATERAL (SELECT r_asof[s.i] AS asof, r_slot[s.i] AS slot) a
  -- An effect this batch proposed after the request that lost did not exist for it.
  LEFT JOIN :"schema".effects x ON NOT r_ok[s.i] AND x.id = p_ids[s.i] AND (a.asof IS NOT NULL OR s_found[a.slot] OR s_new[a.slot] IS NULL)
  ORDER BY s.i;
END
$fn$;
