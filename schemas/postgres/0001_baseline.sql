-- Interlock schema, baseline (PostgreSQL): every object of the shared store,
-- as the first release installs it. Later changes are migrations of their
-- own (0002, ...); this file never changes once released (its checksum is
-- recorded in schema_migrations).
--
-- lock: none: creates the schema's objects; nothing that exists is touched.
--
-- The schema placeholder (psql's syntax for a quoted identifier variable) is
-- replaced by `interlock install` with the configured name, validated and quoted.
--
-- journal_records is the truth: one hash-chained row per state change, per
-- journal (an agent thread). effects is a projection of it (each effect's
-- latest state) kept in the same transaction, for lookups and listing.
-- journals holds each journal's head; appends lock its row (FOR UPDATE), so
-- writers on any number of hosts extend a chain one after another.
--
-- Who may do what is the grants' business (src/core/stores/postgres/grants.ts,
-- `interlock install --print-grants`); the installer owns everything here.

CREATE TABLE :"schema".journals (
  journal    text PRIMARY KEY,
  head_seq   bigint NOT NULL,
  head_hash  text NOT NULL,
  -- The database role that started the journal (see propose() below).
  started_by text DEFAULT session_user
);

-- fillfactor 80: a claim or a lease renewal changes no indexed column; with
-- room left on the page it is a HOT update and adds no index entry at all.
CREATE TABLE :"schema".effects (
  id            text PRIMARY KEY,
  journal       text NOT NULL,
  thread        text NOT NULL,
  target        text NOT NULL,
  action        text NOT NULL,
  tier          smallint NOT NULL CHECK (tier IN (1, 2, 3)),
  -- canonical JSON of the effect (json, not jsonb: the text is kept as written)
  effect        json NOT NULL,
  state         text NOT NULL CHECK (state IN ('PROPOSED', 'HELD', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REJECTED', 'FAILED', 'AMBIGUOUS')),
  last_seq      bigint NOT NULL,
  -- canonical JSON of the last record's data
  detail        json NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  -- A relay's lease: the relay's id, its fencing token (from lease_tokens, so
  -- every claim gets a number no earlier claim had) and its expiry (database
  -- time, so relays on several hosts agree). Appends a relay makes carry its
  -- token; the store compares it with the row inside the append's
  -- transaction, so a relay that lost its lease can no longer move the effect.
  lease_relay   text,
  lease_token   bigint,
  lease_expires timestamptz,
  -- The database role that proposed it (see propose() below).
  proposed_by   text DEFAULT session_user
) WITH (fillfactor = 80);

-- Every state change of an effect is an UPDATE that changes an indexed
-- column (state), so it adds an entry to every index of the table: each
-- index costs every append, and the table keeps few.
--
-- `interlock outbox status` counts every state with one grouped query that
-- this index answers by itself (README, "What the commands ask of the database").
CREATE INDEX effects_state_idx ON :"schema".effects (state);

-- The claim: the target's ready effects in (created_at, id) order, read from
-- the front up to the claim's limit, with no sort.
CREATE INDEX effects_claim_idx ON :"schema".effects (target, created_at, id)
  WHERE state IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED');

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

-- Histories (an effect's records); listing a thread reads the primary key (an effect's thread is its journal).
CREATE INDEX journal_records_effect_idx ON :"schema".journal_records (effect_id);

CREATE SEQUENCE :"schema".lease_tokens;

-- One row per relay, upserted by its heartbeat: `outbox status` shows who drains the outbox.
CREATE TABLE :"schema".relays (
  relay      text PRIMARY KEY,
  info       json NOT NULL,
  started_at timestamptz NOT NULL,
  last_seen  timestamptz NOT NULL
);

-- append(): a batch of appends in one round trip, its own transaction
-- (called as one autocommit statement).
--
-- Its rules are those of src/core/stores/append-plan.ts (the in-memory
-- planner SQLite uses):
--  - effects are locked in id order, then heads in journal order (the order
--    claim, renew and release rely on: no deadlocks);
--  - an effect in a journal this call did not lock was created concurrently
--    after we looked: for this batch it does not exist;
--  - compare-and-set: the request's `from` must be the effect's state now
--    (NULL: no effect); fencing: a request naming a lease counts only while
--    that lease is the effect's lease now;
--  - the record hash is record-hash.ts's formula, byte for byte; the data
--    text is the canonical JSON the client computed;
--  - a written record wakes its NOTIFY channel (notify.ts decides), at commit.
-- The client checks `from -> to` against the lifecycle table before calling
-- (validateAppendRequests); a request passing compare-and-set therefore
-- moves along an allowed transition.
--
-- One row per request, in request order: ok with the record's journal, seq and hashes,
-- or not ok with the effect as it is now (all NULL when it does not exist).
--
-- append_each() is the batch as a loop, each request reading what the ones
-- before it wrote: for a batch naming one effect twice (a proposal and its
-- next step in one call, as Outbox.submit sends). append() hands such a
-- batch to it, and does the usual one (distinct effects) set-based:
--   1. lock the effects it moves, in id order, reading state, lease and journal;
--   2. lock the heads of their journals, in journal order (created when missing);
--   3. read the effects it proposes (under their journal's lock);
--   4. check compare-and-set and fencing, chain and hash, in memory, in request order;
--   5. write records, effects and heads, one statement each;
--   6. answer one row per request.
-- Measured with pg_stat_statements on a one-relay drain: the loop spent about
-- 160 µs of server time per request, a third of it the loop's own overhead.
--
-- append() plans nested loops only: PL/pgSQL plans its statements once,
-- generically, and the planner guesses a set-returning function yields 1,000
-- rows, so it chose hash joins that read the whole effects table per
-- statement (8 ms per batch of 64). A batch is at most a group commit's
-- worth of requests, each finding its effect by primary key.

CREATE FUNCTION :"schema".append_each(
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
    SELECT array_agg(q.head_seq ORDER BY q.journal), array_agg(q.head_hash ORDER BY q.journal) INTO v_hseq, v_hhash
      FROM (SELECT h.journal, h.head_seq, h.head_hash FROM :"schema".journals h
            WHERE h.journal = ANY(v_journals) ORDER BY h.journal FOR UPDATE) q;
  ELSE
    -- Some are new: one at a time, in order, creating the missing ones (as append_each() does).
    v_hseq := '{}';
    v_hhash := '{}';
    FOR k IN 1 .. array_length(v_journals, 1) LOOP
      SELECT h.head_seq, h.head_hash INTO v_seq, v_prev FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
      IF NOT FOUND THEN
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

-- append_step(): one request in one round trip, answered in one text value.
--
-- A sequential caller (a gate stepping one effect: four appends per effect,
-- each its own durable commit) waits for every append in turn, so what a
-- call costs besides its writes counts four times per effect; a set of 13
-- columns costs the server a tuplestore and the client a row description
-- and a row each time (measured: ~90 µs more than a one-row INSERT). It
-- returns:
--   '<seq> <prev_hash> <hash> <journal>' when the record was written
--   (hashes are 64 hex digits; the journal, last, may contain spaces);
--   NULL when compare-and-set or fencing lost: nothing was written, and the
--   caller reads the effect as it stands now if it wants it.
-- Same locking order (the effect, then its head), checks, hash formula and
-- notification as append().
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

-- claim(): per target, the oldest ready effects whose lease is free or ran
-- out, FOR UPDATE SKIP LOCKED (relays claiming at once take different rows and
-- never wait on each other or on an append), merged oldest first, leased with
-- a fresh fencing token and an expiry in database time. p_targets NULL: every
-- target; p_from NULL: from the oldest.
--
-- It plans without bitmap scans: on a backlog the statistics have not caught
-- up with (100,000 effects filled, then drained at once) a bitmap scan plus a
-- sort looks cheaper than reading effects_claim_idx from the front (measured:
-- 33 ms against 2.3 ms per claim mid-drain). A statistics-proof plan matters
-- most exactly when the backlog is large and new.
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

-- Agent access: a database role that can only propose.
--
-- In outbox mode the agent is the party being restrained (docs/design.md,
-- "The trust boundary"; README, "Database roles and grants"): it proposes
-- effects and reads its own effects' outcomes, and nothing else. Its role is
-- granted exactly these (`interlock install --print-grants --agent <role>`):
--  - propose(), which writes new effects' PROPOSED records and nothing else;
--  - two views, own_effects and own_records: the effects it proposed and
--    their records.
-- The function (SECURITY DEFINER) and the views run with their owner's (the
-- installer's) rights, so the agent needs no privilege on any table.
--
-- "Its own" is decided by the database, at proposal time: the role that
-- logged in (session_user; SET ROLE does not change it, so an agent cannot
-- act as a role it may become) is recorded in effects.proposed_by. Each
-- journal (a thread) records the role that started it in
-- journals.started_by, and an agent proposes only into threads it started:
-- it cannot lengthen another role's journal, nor make its verification fail.
-- Both columns default to session_user for every other writer too (an
-- operator's compensation, an inline gate on this store).

-- propose(): a batch of proposals (parallel arrays, one entry per effect),
-- one transaction, one round trip. Same rules as append_step() for a
-- proposal:
--  - heads are locked in journal order, created when missing (the order
--    append() and append_step() lock them; a proposal locks no effect);
--  - an effect that exists already, read under its journal's lock, wins: the
--    request answers not ok and writes nothing (one proposed concurrently is
--    committed by now);
--  - the record hash is record-hash.ts's formula, byte for byte;
--  - a record wakes relays (NOTIFY interlock_ready, the schema as payload),
--    delivered at commit.
-- What the caller cannot choose: the state (PROPOSED), the record's data
-- (built here from the effect and its tier, exactly the text
-- append-plan.ts's requestTexts() builds), its time (the database's clock,
-- so a proposal cannot be backdated), the genesis hash, the channel. The
-- effect must name the id, thread, target and action its row is filed under.
-- What it cannot check (the id is the hash of the canonical effect) is
-- checked by the relay and `outbox verify`, which recompute it.
--
-- One row per request, in request order: ok with the record's journal, seq,
-- hashes and time; or not ok (the effect exists: the caller reads it through
-- own_effects). A malformed request, a thread started by another role, or an
-- effect proposed by another role raise an error: nothing is written.
CREATE FUNCTION :"schema".propose(
  p_ids     text[],
  p_threads text[],
  p_targets text[],
  p_actions text[],
  p_tiers   smallint[],
  p_effects text[]    -- each effect's canonical JSON (effectJson)
) RETURNS TABLE (
  idx       integer,
  ok        boolean,
  journal   text,
  seq       bigint,
  prev_hash text,
  hash      text,
  at        text
)
LANGUAGE plpgsql
SECURITY DEFINER
-- Every name below is schema-qualified; pg_catalog comes first (implicitly) and pg_temp last,
-- so no object of the caller's can stand in for one.
SET search_path = :"schema", pg_temp
AS $fn$
#variable_conflict use_column
DECLARE
  c_name     constant text := '^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$';   -- effect.ts's NAME
  c_genesis  constant text := repeat('0', 64);
  n_req      integer := coalesce(cardinality(p_ids), 0);
  v_me       text := session_user;
  v_at       text := to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  v_journals text[];
  v_hseq     bigint[] := '{}';
  v_hhash    text[] := '{}';
  v_dirty    boolean[] := '{}';
  v_e        json;
  v_owner    text;
  v_by       text;
  v_k        integer;
  v_seq      bigint;
  v_prev     text;
  v_hash     text;
  v_data     text;
  v_woke     boolean := false;
  n          integer;
BEGIN
  IF n_req = 0 THEN
    RETURN;
  END IF;
  IF array_ndims(p_ids) <> 1 OR array_lower(p_ids, 1) <> 1
     OR coalesce(cardinality(p_threads), -1) <> n_req OR coalesce(cardinality(p_targets), -1) <> n_req
     OR coalesce(cardinality(p_actions), -1) <> n_req OR coalesce(cardinality(p_tiers), -1) <> n_req
     OR coalesce(cardinality(p_effects), -1) <> n_req
     OR array_ndims(p_threads) <> 1 OR array_ndims(p_targets) <> 1 OR array_ndims(p_actions) <> 1
     OR array_ndims(p_tiers) <> 1 OR array_ndims(p_effects) <> 1
     OR array_lower(p_threads, 1) <> 1 OR array_lower(p_targets, 1) <> 1 OR array_lower(p_actions, 1) <> 1
     OR array_lower(p_tiers, 1) <> 1 OR array_lower(p_effects, 1) <> 1 THEN
    RAISE EXCEPTION 'propose: the argument arrays must be one-dimensional, from 1, and of one length' USING ERRCODE = '22023';
  END IF;

  -- 1. Each request is a well-formed proposal whose effect names the row it is filed under.
  FOR i IN 1 .. n_req LOOP
    IF (p_ids[i] ~ '^[0-9a-f]{64}$' AND p_threads[i] ~ c_name AND p_targets[i] ~ c_name AND p_actions[i] ~ c_name
        AND p_tiers[i] IN (1, 2, 3) AND p_effects[i] IS NOT NULL) IS NOT TRUE THEN
      RAISE EXCEPTION 'propose: request % is malformed (id, thread, target, action, tier or effect)', i USING ERRCODE = '22023';
    END IF;
    v_e := p_effects[i]::json;
    IF json_typeof(v_e) IS DISTINCT FROM 'object' THEN
      RAISE EXCEPTION 'propose: request %''s effect is not a JSON object', i USING ERRCODE = '22023';
    END IF;
    IF (v_e ->> 'id' = p_ids[i] AND v_e ->> 'thread' = p_threads[i] AND v_e ->> 'target' = p_targets[i]
        AND v_e ->> 'action' = p_actions[i]
        AND json_typeof(v_e -> 'args') = 'object' AND json_typeof(v_e -> 'premises') = 'object'
        AND coalesce(json_typeof(v_e -> 'key') = 'string', true)
        AND NOT EXISTS (SELECT 1 FROM json_object_keys(v_e) AS k
                        WHERE k NOT IN ('id', 'thread', 'target', 'action', 'args', 'premises', 'key'))) IS NOT TRUE THEN
      RAISE EXCEPTION 'propose: request %''s effect does not match its id, thread, target and action, or is not an effect', i
        USING ERRCODE = '22023';
    END IF;
  END LOOP;

  -- 2. The heads, in journal order, created when missing; each must be a thread this role started.
  SELECT array_agg(DISTINCT x ORDER BY x) INTO v_journals FROM unnest(p_threads) AS x;
  FOR k IN 1 .. array_length(v_journals, 1) LOOP
    SELECT h.head_seq, h.head_hash, h.started_by INTO v_seq, v_prev, v_owner
      FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO :"schema".journals AS h (journal, head_seq, head_hash, started_by)
        VALUES (v_journals[k], 0, c_genesis, v_me) ON CONFLICT (journal) DO NOTHING;
      GET DIAGNOSTICS n = ROW_COUNT;
      IF n = 1 THEN
        v_seq := 0;
        v_prev := c_genesis;
        v_owner := v_me;
      ELSE
        SELECT h.head_seq, h.head_hash, h.started_by INTO v_seq, v_prev, v_owner
          FROM :"schema".journals h WHERE h.journal = v_journals[k] FOR UPDATE;
      END IF;
    END IF;
    IF v_owner IS DISTINCT FROM v_me THEN
      RAISE EXCEPTION 'thread "%" was started by another database role; this role proposes only into threads it started', v_journals[k]
        USING ERRCODE = '42501';
    END IF;
    v_hseq[k] := v_seq;
    v_hhash[k] := v_prev;
    v_dirty[k] := false;
  END LOOP;

  -- 3. In request order: an effect that exists answers not ok; the others are chained and written.
  FOR i IN 1 .. n_req LOOP
    SELECT x.proposed_by INTO v_by FROM :"schema".effects x WHERE x.id = p_ids[i];
    IF FOUND THEN
      IF v_by IS DISTINCT FROM v_me THEN
        RAISE EXCEPTION 'effect % was proposed by another database role', p_ids[i] USING ERRCODE = '42501';
      END IF;
      idx := i; ok := false; journal := NULL; seq := NULL; prev_hash := NULL; hash := NULL; at := NULL;
      RETURN NEXT;
      CONTINUE;
    END IF;
    v_k := array_position(v_journals, p_threads[i]);
    v_seq := v_hseq[v_k] + 1;
    v_prev := v_hhash[v_k];
    v_data := '{"effect":' || p_effects[i] || ',"tier":' || p_tiers[i]::text || '}';
    v_hash := encode(sha256(convert_to(
      p_threads[i] || E'\n' || v_seq::text || E'\n' || p_ids[i] || E'\n' || 'PROPOSED' || E'\n' || v_at || E'\n' || v_data || E'\n' || v_prev,
      'UTF8')), 'hex');
    INSERT INTO :"schema".journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
      VALUES (p_threads[i], v_seq, p_ids[i], 'PROPOSED', v_at, v_data, v_prev, v_hash);
    INSERT INTO :"schema".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at, proposed_by)
      VALUES (p_ids[i], p_threads[i], p_threads[i], p_targets[i], p_actions[i], p_tiers[i], p_effects[i]::json, 'PROPOSED', v_seq,
              v_data::json, v_at::timestamptz, v_at::timestamptz, v_me);
    v_hseq[v_k] := v_seq;
    v_hhash[v_k] := v_hash;
    v_dirty[v_k] := true;
    v_woke := true;
    idx := i; ok := true; journal := p_threads[i]; seq := v_seq; prev_hash := v_prev; hash := v_hash; at := v_at;
    RETURN NEXT;
  END LOOP;

  UPDATE :"schema".journals h SET head_seq = u.sq, head_hash = u.hs
    FROM unnest(v_journals, v_hseq, v_hhash, v_dirty) AS u(jn, sq, hs, dirty)
    WHERE h.journal = u.jn AND u.dirty;

  IF v_woke THEN
    -- Delivered at commit, and only then; the payload names this schema (notify.ts).
    PERFORM pg_notify('interlock_ready', current_schema());
  END IF;
END
$fn$;

-- Functions are executable by PUBLIC unless revoked; this one is granted by name.
REVOKE EXECUTE ON FUNCTION :"schema".propose(text[], text[], text[], text[], smallint[], text[]) FROM PUBLIC;

-- The effects this role proposed, as the store reads them. security_barrier:
-- a condition the reader adds (possibly a function of its own that leaks what
-- it sees) is applied only to rows this view already let through.
CREATE VIEW :"schema".own_effects WITH (security_barrier) AS
  SELECT e.id, e.journal, e.thread, e.target, e.action, e.tier, e.effect, e.state, e.last_seq, e.detail, e.created_at, e.updated_at
  FROM :"schema".effects e
  WHERE e.proposed_by = session_user::text;

-- Their records, each with the hash of the record before it in its journal
-- (which may be another effect's), so a history verifies link by link.
CREATE VIEW :"schema".own_records WITH (security_barrier) AS
  SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash,
         (SELECT p.hash FROM :"schema".journal_records p WHERE p.journal = r.journal AND p.seq = r.seq - 1) AS predecessor
  FROM :"schema".journal_records r
  JOIN :"schema".effects e ON e.id = r.effect_id
  WHERE e.proposed_by = session_user::text;
