/**
 * Every SQL statement the PostgreSQL store runs, for one (validated, quoted)
 * schema. Values always go as parameters; batches go as arrays through
 * unnest(), so a group-committed batch is a handful of statements whatever its size.
 */
import { STATES, TERMINAL_STATES, type State } from '../../lifecycle.js'
import { quoteSchema } from './identifier.js'

export const UNSETTLED_STATES = STATES.filter((s) => !TERMINAL_STATES.includes(s))

/**
 * States as SQL literals (only names of the fixed enum pass), not a parameter:
 * the planner then plans for the states actually asked for, and can use the
 * partial index of ready effects (schemas/postgres/0001_baseline.sql),
 * whose condition names states.
 */
export function stateList(states: readonly State[]): string {
  const known = states.filter((s) => (STATES as readonly string[]).includes(s))
  if (known.length === 0) throw new Error('no states to look for')
  return known.map((s) => `'${s}'`).join(', ')
}

const EFFECT_COLUMNS = 'id, journal, effect, tier, state, last_seq, detail, created_at, updated_at'
const RECORD_COLUMNS = 'journal, seq, effect_id, state, at, data, prev_hash, hash'

export type PgStatements = ReturnType<typeof statements>

/**
 * How a store's database role may use the schema: "full" (relays, operators,
 * read-only tools: tables, as their grants allow) or "agent" (propose() and
 * the views of its own effects, schemas/postgres/0001_baseline.sql).
 */
export type PgAccess = 'full' | 'agent'

export function statements(schema: string, access: PgAccess = 'full') {
  const s = quoteSchema(schema)
  const agent = access === 'agent'
  const effects = agent ? `${s}.own_effects` : `${s}.effects`
  const records = `${s}.journal_records`
  const journals = `${s}.journals`
  return {
    effectColumns: EFFECT_COLUMNS,
    effectsTable: effects,
    // One batch of appends, one round trip, its own transaction (schemas/postgres/0001_baseline.sql, append(),
    // as 0005_append_head_guard.sql redefines it).
    append: `SELECT idx, ok, journal, seq, prev_hash, hash, effect, tier, state, last_seq, detail, created_at, updated_at
      FROM ${s}.append($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::smallint[],
                       $9::text[], $10::text[], $11::bigint[], $12::text[], $13, $14, $15)`,
    // A batch holding chains (Store.append: a chain is all or nothing), each checked and written whole
    // (schemas/postgres/0004_append_chain.sql, append_chains()).
    appendChains: `SELECT idx, ok, journal, seq, prev_hash, hash, effect, tier, state, last_seq, detail, created_at, updated_at
      FROM ${s}.append_chains($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::smallint[],
                              $9::text[], $10::text[], $11::bigint[], $12::text[], $13::boolean[], $14, $15, $16)`,
    // A batch of one, as scalars, answered as one text value: what a sequential caller sends every time
    // (append_step(): schemas/postgres/0001_baseline.sql, redefined by 0004_append_chain.sql).
    appendStep: `SELECT ${s}.append_step($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::smallint,
                           $9::text, $10::text, $11::bigint, $12::text, $13, $14, $15) AS r`,
    // One chain of one effect (Store.append: all or nothing), every state its own record, in one statement
    // answered as one text value (schemas/postgres/0004_append_chain.sql, append_chain()).
    appendChain: `SELECT ${s}.append_chain($1::text, $2::text, $3::text[], $4::text[], $5::text, $6::text, $7::text, $8::smallint,
                           $9::text, $10::text, $11::bigint, $12::text[], $13, $14, $15) AS r`,
    // Agent access: new effects' PROPOSED records only, one batch per call (schemas/postgres/0001_baseline.sql).
    propose: `SELECT idx, ok, journal, seq, prev_hash, hash, at
      FROM ${s}.propose($1::text[], $2::text[], $3::text[], $4::text[], $5::smallint[], $6::text[])`,
    effect: `SELECT ${EFFECT_COLUMNS} FROM ${effects} WHERE id = $1`,
    // Agent access reads its own records from a view that carries each one's predecessor hash.
    history: agent
      ? `SELECT journal, seq, effect_id, state, at, data, prev_hash, hash, predecessor
      FROM ${s}.own_records WHERE effect_id = $1 ORDER BY journal, seq`
      : `SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash, coalesce(p.hash, b.hash) AS predecessor
      FROM ${records} r LEFT JOIN ${records} p ON p.journal = r.journal AND p.seq = r.seq - 1
      LEFT JOIN ${s}.journal_bases b ON b.journal = r.journal AND b.seq = r.seq - 1
      WHERE r.effect_id = $1 ORDER BY r.journal, r.seq`,
    // The histories of many effects in one statement (one snapshot), each record with its effect's row (history-batch.ts).
    // LATERAL lookups per id: index probes whatever the statistics say (a fresh backlog has none, and a plain
    // join then hashes both whole tables: 56 ms instead of 1 for 64 effects).
    // A record whose predecessor was pruned links to its journal's base (the last record removed).
    histories: `SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash, p.hash AS predecessor,
        e.journal AS row_journal, e.last_seq AS row_last_seq
      FROM unnest($1::text[]) AS ids(id)
      CROSS JOIN LATERAL (SELECT * FROM ${records} r WHERE r.effect_id = ids.id OFFSET 0) r
      LEFT JOIN LATERAL (SELECT hash FROM ${records} p WHERE p.journal = r.journal AND p.seq = r.seq - 1
                         UNION ALL SELECT hash FROM ${s}.journal_bases b WHERE b.journal = r.journal AND b.seq = r.seq - 1 LIMIT 1) p ON true
      LEFT JOIN LATERAL (SELECT journal, last_seq FROM ${effects} e WHERE e.id = ids.id LIMIT 1) e ON true
      ORDER BY r.effect_id, r.journal, r.seq`,
    inFlight: `SELECT id, journal, state, last_seq FROM ${effects} WHERE state IN (${stateList(UNSETTLED_STATES)})`,
    // An effect's thread is its journal: its records find it by journal_records' primary key.
    inThread: (n: number) => (agent ? `journal = $${n}` : `id IN (SELECT effect_id FROM ${records} WHERE journal = $${n})`),
    // Recovery's read (stores/in-flight-check.ts): the in-flight effects' own records, each with the hash of the
    // record before it (or the journal's base) and the previous-hash of the one after it. LATERAL probes per id, as
    // `histories` does: index lookups whatever the statistics say, nothing of the journals around them.
    inFlightRecords: `SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash, p.hash, n.prev_hash
      FROM unnest($1::text[]) AS ids(id)
      CROSS JOIN LATERAL (SELECT * FROM ${records} r WHERE r.effect_id = ids.id OFFSET 0) r
      LEFT JOIN LATERAL (SELECT hash FROM ${records} p WHERE p.journal = r.journal AND p.seq = r.seq - 1
                         UNION ALL SELECT hash FROM ${s}.journal_bases b WHERE b.journal = r.journal AND b.seq = r.seq - 1 LIMIT 1) p ON true
      LEFT JOIN LATERAL (SELECT prev_hash FROM ${records} n WHERE n.journal = r.journal AND n.seq = r.seq + 1) n ON true`,
    // Where each journal ends: its head row (nulls without one), the record at the head (or the base, when pruned
    // right up to it), and the first record past the head.
    journalEnds: `SELECT js.journal, h.head_seq, h.head_hash,
        coalesce((SELECT hash FROM ${records} r WHERE r.journal = js.journal AND r.seq = h.head_seq),
                 (SELECT hash FROM ${s}.journal_bases b WHERE b.journal = js.journal AND b.seq = h.head_seq)) AS at_head,
        (SELECT seq FROM ${records} x WHERE x.journal = js.journal AND x.seq > coalesce(h.head_seq, 0) ORDER BY seq LIMIT 1) AS beyond
      FROM unnest($1::text[]) AS js(journal) LEFT JOIN ${journals} h ON h.journal = js.journal`,
    checkpoints: `SELECT digest, made_at, document FROM ${s}.checkpoints ORDER BY made_at, digest`,
    insertSeals: `INSERT INTO ${s}.seals (at, seal) SELECT * FROM unnest($1::text[], $2::text[])`,
    seals: `SELECT seal FROM ${s}.seals ORDER BY id`,
    sealsAt: `SELECT seal FROM ${s}.seals WHERE at = ANY($1::text[]) ORDER BY id`,
    recordsPage: `SELECT ${RECORD_COLUMNS} FROM ${records} WHERE (journal, seq) > ($1, $2) ORDER BY journal, seq LIMIT $3`,
    // What a caller's thread read, kept per database role (schemas/postgres/0006_callers.sql).
    rememberRead: `SELECT ${s}.remember_read($1, $2, $3, $4, $5)`,
    recallRead: `SELECT digest FROM ${s}.own_thread_reads WHERE principal = $1 AND thread = $2 AND target = $3 AND read = $4`,
  }
}
