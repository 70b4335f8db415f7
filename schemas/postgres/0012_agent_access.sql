-- Interlock agent access (PostgreSQL): a database role that can only propose.
--
-- In outbox mode the agent is the party being restrained (docs/design.md,
-- "The trust boundary"; README, "Database roles and grants"): it proposes
-- effects and reads its own effects' outcomes, and nothing else. Its role is granted exactly what this
-- migration adds (`interlock install --print-grants --agent <role>`):
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
-- operator's compensation, an inline gate on this store); rows written
-- before this migration keep NULL: nobody's.

ALTER TABLE :"schema".effects ADD COLUMN proposed_by text;
ALTER TABLE :"schema".effects ALTER COLUMN proposed_by SET DEFAULT session_user;
ALTER TABLE :"schema".journals ADD COLUMN started_by text;
ALTER TABLE :"schema".journals ALTER COLUMN started_by SET DEFAULT session_user;

-- propose(): a batch of proposals (parallel arrays, one entry per effect),
-- one transaction, one round trip. Same rules as append_step() for a
-- proposal (schemas/postgres/0008_append_step.sql):
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
