-- Interlock callers (PostgreSQL): what the MCP gateway (`interlock
-- mcp-proxy`) keeps of who calls it.
--
-- lock: none: replaces one function, adds a table, a function and a view; no table that exists is touched.
--
-- 1. An effect may say who asked (its principal, part of its id) and the W3C
--    trace context of the request that asked (src/core/effect.ts). Both are
--    fields of the effect's canonical JSON, so they are journaled in its
--    PROPOSED record and its row as every other field is; only propose(),
--    the agents' way in, lists the fields an effect may have. It is the
--    baseline's (0001_baseline.sql, released: not edited) with these two
--    added: `principal` a string, `trace` an object. Arguments, answers and
--    locking are the baseline's: CREATE OR REPLACE keeps its owner and grants.
--
-- 2. thread_reads: what each caller's thread read through the gateway, for
--    premises (src/integrations/mcp/reads.ts): per database role, principal,
--    thread and target, the digest of the last answer of each read (`read`
--    names the read: the SHA-256 of its tool and canonical arguments). A
--    write that rests on a read is checked against what the caller saw, even
--    when the gateway that served the read has since restarted. Kept apart
--    per database role (written_by, session_user as propose() records it) as
--    effects are: an agent role reads and writes only its own, through
--    remember_read() and own_thread_reads, and no table.

-- propose(), as in the baseline, taking an effect's principal and trace.
CREATE OR REPLACE FUNCTION :"schema".propose(
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
        AND coalesce(json_typeof(v_e -> 'principal') = 'string', true)
        AND coalesce(json_typeof(v_e -> 'trace') = 'object', true)
        AND NOT EXISTS (SELECT 1 FROM json_object_keys(v_e) AS k
                        WHERE k NOT IN ('id', 'thread', 'target', 'action', 'args', 'premises', 'key', 'principal', 'trace'))) IS NOT TRUE THEN
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


CREATE TABLE :"schema".thread_reads (
  written_by text NOT NULL,
  principal  text NOT NULL,
  thread     text NOT NULL,
  target     text NOT NULL,
  read       text NOT NULL,
  digest     text NOT NULL,
  read_at    timestamptz NOT NULL,
  PRIMARY KEY (written_by, principal, thread, target, read)
);

-- remember_read(): one read's digest, for the calling role, replacing what it remembered of the same read.
CREATE FUNCTION :"schema".remember_read(
  p_principal text,
  p_thread    text,
  p_target    text,
  p_read      text,
  p_digest    text
) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = :"schema", pg_temp
AS $fn$
BEGIN
  IF (length(p_principal) BETWEEN 1 AND 300 AND length(p_thread) BETWEEN 1 AND 200 AND length(p_target) BETWEEN 1 AND 200
      AND p_read ~ '^[0-9a-f]{64}$' AND p_digest ~ '^[0-9a-f]{64}$') IS NOT TRUE THEN
    RAISE EXCEPTION 'remember_read: a principal, a thread, a target, and two SHA-256 hex digests' USING ERRCODE = '22023';
  END IF;
  INSERT INTO :"schema".thread_reads AS t (written_by, principal, thread, target, read, digest, read_at)
    VALUES (session_user, p_principal, p_thread, p_target, p_read, p_digest, statement_timestamp())
    ON CONFLICT (written_by, principal, thread, target, read) DO UPDATE SET digest = excluded.digest, read_at = excluded.read_at;
END
$fn$;

REVOKE EXECUTE ON FUNCTION :"schema".remember_read(text, text, text, text, text) FROM PUBLIC;

-- The reads this role remembered. security_barrier, as own_effects.
CREATE VIEW :"schema".own_thread_reads WITH (security_barrier) AS
  SELECT t.principal, t.thread, t.target, t.read, t.digest, t.read_at
  FROM :"schema".thread_reads t
  WHERE t.written_by = session_user::text;
