-- Interlock retention (PostgreSQL): what `interlock outbox prune` needs to
-- take settled history out of the journals and have them verify still.
--
-- lock: own_records ACCESS EXCLUSIVE: the agents' view of their records is redefined; an agent reading a history waits for it at most lock_timeout
--
-- A journal is a hash chain, so its oldest records cannot simply be deleted:
-- the first record left would point at a missing one. Prune archives them,
-- then deletes them under a checkpoint: a statement signed by an operator or
-- a relay that pins where each journal it cut ends (journal, seq, hash) and
-- the archive's digest. `outbox verify` takes a journal that starts after a
-- trusted checkpoint's head as verified up to it.
--
-- checkpoints keeps each checkpoint as signed (its document: the checkpoint
-- file, src/core/outbox/checkpoint-file.ts), keyed by the digest of its
-- signature. journal_bases says where each pruned journal now starts (its
-- last removed record), so the store's own chain checks (recovery's scan,
-- histories) link the first record left to it. A base is not trusted by
-- verify: only a checkpoint whose signature verifies is.
--
-- New tables lock nothing that exists; the view is replaced in place.

CREATE TABLE :"schema".checkpoints (
  digest   text PRIMARY KEY,
  made_at  timestamptz NOT NULL DEFAULT now(),
  document json NOT NULL
);

CREATE TABLE :"schema".journal_bases (
  journal    text PRIMARY KEY,
  seq        bigint NOT NULL,
  hash       text NOT NULL,
  checkpoint text NOT NULL REFERENCES :"schema".checkpoints (digest)
);

-- The agents' records: the first record left in a pruned journal links to its base.
CREATE OR REPLACE VIEW :"schema".own_records WITH (security_barrier) AS
  SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash,
         coalesce((SELECT p.hash FROM :"schema".journal_records p WHERE p.journal = r.journal AND p.seq = r.seq - 1),
                  (SELECT b.hash FROM :"schema".journal_bases b WHERE b.journal = r.journal AND b.seq = r.seq - 1)) AS predecessor
  FROM :"schema".journal_records r
  JOIN :"schema".effects e ON e.id = r.effect_id
  WHERE e.proposed_by = session_user::text;
