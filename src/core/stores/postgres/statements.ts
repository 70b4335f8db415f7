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
    // The serialisation point of a journal is its head row. Create-or-lock in one round trip:
    // the no-op DO UPDATE locks existing heads, rows are taken in journal order (no deadlocks),
    // and RETURNING gives each head as locked.
    ensureAndLockHeads: `INSERT INTO ${journals} AS h (journal, head_seq, head_hash)
      SELECT j, 0, $2 FROM unnest($1::text[]) AS j ORDER BY j
      ON CONFLICT (journal) DO UPDATE SET head_seq = h.head_seq
      RETURNING journal, head_seq, head_hash`,
    // Every write of a batch in one statement (one round trip): records, new effects,
    // moved effects (compare-and-set on last_seq, counted), heads, and the notifications.
    writeBatch: `WITH
      rec AS (INSERT INTO ${records} (${RECORD_COLUMNS})
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])),
      created AS (INSERT INTO ${effects} (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
        SELECT u.id, u.journal, u.journal, u.target, u.action, u.tier, u.effect::json, u.state, u.last_seq, u.detail::json,
               u.created_at::timestamptz, u.updated_at::timestamptz
        FROM unnest($9::text[], $10::text[], $11::text[], $12::text[], $13::smallint[], $14::text[], $15::text[], $16::bigint[],
                    $17::text[], $18::text[], $19::text[])
          AS u(id, journal, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)),
      moved AS (UPDATE ${effects} AS e
        SET state = u.state, last_seq = u.last_seq, detail = u.detail::json, updated_at = u.updated_at::timestamptz
        FROM unnest($20::text[], $21::text[], $22::bigint[], $23::text[], $24::text[], $25::bigint[])
          AS u(id, state, last_seq, detail, updated_at, previous_seq)
        WHERE e.id = u.id AND e.last_seq = u.previous_seq
        RETURNING 1),
      heads AS (UPDATE ${journals} AS j SET head_seq = u.seq, head_hash = u.hash
        FROM unnest($26::text[], $27::bigint[], $28::text[]) AS u(journal, seq, hash) WHERE j.journal = u.journal)
      SELECT (SELECT count(*) FROM moved)::int AS moved,
             (SELECT count(pg_notify(c, $29)) FROM unnest($30::text[]) AS c)::int AS notified`,
    // Locked (in id order, as renew and release lock them: no deadlock) so a claim cannot
    // change an effect's lease between the fencing check and the write (claims skip locked rows).
    effectsByIds: `SELECT ${EFFECT_COLUMNS}, lease_relay, lease_token FROM ${effects} WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
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
