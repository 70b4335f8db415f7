/**
 * Every SQL statement the PostgreSQL store runs, for one (validated, quoted)
 * schema. Values always go as parameters; batches go as arrays through
 * unnest(), so a group-committed batch is a handful of statements whatever its size.
 */
import { STATES, TERMINAL_STATES } from '../../lifecycle.js'
import { quoteSchema } from './identifier.js'

export const UNSETTLED_STATES = STATES.filter((s) => !TERMINAL_STATES.includes(s))

const EFFECT_COLUMNS = 'id, journal, effect, tier, state, last_seq, detail, created_at, updated_at'
const RECORD_COLUMNS = 'journal, seq, effect_id, state, at, data, prev_hash, hash'

export type PgStatements = ReturnType<typeof statements>

export function statements(schema: string) {
  const s = quoteSchema(schema)
  const effects = `${s}.effects`
  const records = `${s}.journal_records`
  const journals = `${s}.journals`
  return {
    effectColumns: EFFECT_COLUMNS,
    effectsTable: effects,
    journalsOf: `SELECT id, journal FROM ${effects} WHERE id = ANY($1::text[])`,
    // Create missing heads, in a fixed order, so two batches never wait on each other's new rows crosswise.
    ensureHeads: `INSERT INTO ${journals} (journal, head_seq, head_hash)
      SELECT j, 0, $2 FROM unnest($1::text[]) AS j ORDER BY j ON CONFLICT (journal) DO NOTHING`,
    // The serialisation point of a journal: its head row, locked in a fixed order (no deadlocks).
    lockHeads: `SELECT journal, head_seq, head_hash FROM ${journals} WHERE journal = ANY($1::text[]) ORDER BY journal FOR UPDATE`,
    // Locked (in id order, as renew and release lock them: no deadlock) so a claim cannot
    // change an effect's lease between the fencing check and the write (claims skip locked rows).
    effectsByIds: `SELECT ${EFFECT_COLUMNS}, lease_relay, lease_token FROM ${effects} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
    notify: `SELECT pg_notify(c, $1) FROM unnest($2::text[]) AS c`,
    insertRecords: `INSERT INTO ${records} (${RECORD_COLUMNS})
      SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])`,
    insertEffects: `INSERT INTO ${effects} (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
      SELECT u.id, u.journal, u.journal, u.target, u.action, u.tier, u.effect::json, u.state, u.last_seq, u.detail::json,
             u.created_at::timestamptz, u.updated_at::timestamptz
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::smallint[], $6::text[], $7::text[], $8::bigint[],
                  $9::text[], $10::text[], $11::text[])
        AS u(id, journal, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)`,
    // The SQL half of compare-and-set: each row must still be where the transaction read it.
    updateEffects: `UPDATE ${effects} AS e
      SET state = u.state, last_seq = u.last_seq, detail = u.detail::json, updated_at = u.updated_at::timestamptz
      FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[])
        AS u(id, state, last_seq, detail, updated_at, previous_seq)
      WHERE e.id = u.id AND e.last_seq = u.previous_seq`,
    updateHeads: `UPDATE ${journals} AS j SET head_seq = u.seq, head_hash = u.hash
      FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(journal, seq, hash) WHERE j.journal = u.journal`,
    effect: `SELECT ${EFFECT_COLUMNS} FROM ${effects} WHERE id = $1`,
    history: `SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash, p.hash AS predecessor
      FROM ${records} r LEFT JOIN ${records} p ON p.journal = r.journal AND p.seq = r.seq - 1
      WHERE r.effect_id = $1 ORDER BY r.journal, r.seq`,
    inFlight: `SELECT id, journal, state, last_seq FROM ${effects} WHERE state = ANY($1::text[])`,
    heads: `SELECT journal, head_seq, head_hash FROM ${journals} WHERE journal = ANY($1::text[])`,
    journalRecordsPage: `SELECT ${RECORD_COLUMNS} FROM ${records}
      WHERE journal = ANY($1::text[]) AND (journal, seq) > ($2, $3) ORDER BY journal, seq LIMIT $4`,
    recordsPage: `SELECT ${RECORD_COLUMNS} FROM ${records} WHERE (journal, seq) > ($1, $2) ORDER BY journal, seq LIMIT $3`,
  }
}
