-- Interlock append() plans (PostgreSQL): nested loops over the batch.
--
-- 0007's append() joins the batch (generate_subscripts / unnest of its
-- arrays) to effects. PL/pgSQL plans those statements once, generically,
-- and the planner guesses a set-returning function yields 1,000 rows, so it
-- chose hash joins that read the whole effects table per statement: with 64
-- submits in flight on one journal, 8 ms of server time per batch, most of
-- it in the answer's join (3.3 ms) and the effects update (2 ms). A batch is
-- at most a group commit's worth of requests, each finding its effect by
-- primary key: nested loops over index probes are always the right plan.

ALTER FUNCTION :"schema".append(text[], text[], text[], text[], text[], text[], text[], smallint[], text[], text[], bigint[], text[], text, text, text)
  SET enable_hashjoin = off;
ALTER FUNCTION :"schema".append(text[], text[], text[], text[], text[], text[], text[], smallint[], text[], text[], bigint[], text[], text, text, text)
  SET enable_mergejoin = off;
