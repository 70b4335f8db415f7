-- Interlock append for batches, set-based (PostgreSQL).
--
-- A relay's group commit sends batches of ~64 appends of as many different
-- effects (DISPATCHED and COMMITTED of the effects in flight). 0005's append()
-- ran half a dozen statements per request inside a PL/pgSQL loop; measured
-- with pg_stat_statements (track = all) on a one-relay drain, about 160 µs of
-- server time per request, a third of it the loop's own overhead. Here a
-- batch whose requests name distinct effects (the usual case) runs a fixed
-- number of statements, each over the whole batch:
--   1. lock the effects it moves, in id order, reading state, lease and journal;
--   2. lock the heads of their journals, in journal order (created when missing);
--   3. read the effects it proposes (under their journal's lock);
--   4. check compare-and-set and fencing, chain and hash, in memory, in request order;
--   5. write records, effects and heads, one statement each;
--   6. answer one row per request.
-- Same contract, lock order (effects by id, then heads by journal), hash
-- formula and notifications as 0005. A batch naming one effect twice (a
-- proposal and its next step in one call, as Outbox.submit sends) needs
-- each request to see the one before it: it goes to append_each(), 0005's
-- loop, kept under that name.

ALTER FUNCTION :"schema".append(text[], text[], text[], text[], text[], text[], text[], smallint[], text[], text[], bigint[], text[], text, text, text)
  RENAME TO append_each;

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
    -- Some are new: one at a time, in order, creating the missing ones (0005's way).
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
