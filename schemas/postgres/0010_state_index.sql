-- Interlock state index, whole again (PostgreSQL).
--
-- 0006 replaced the index on effects(state) by one of unsettled effects only,
-- to spare every settling append an index entry (~5 µs of server time). But
-- `interlock outbox status` counts every state with one grouped query that
-- the whole index answers by itself (README, "What the commands ask of the
-- database"); with only the partial index, counting the settled effects reads
-- the table, which on millions of them is slow. An operator's count that
-- stays fast is worth one index entry per settled effect.

DROP INDEX :"schema".effects_unsettled_idx;
CREATE INDEX effects_state_idx ON :"schema".effects (state);
