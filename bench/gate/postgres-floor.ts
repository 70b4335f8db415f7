/**
 * bench/gate, PostgreSQL baselines, measured in alternating slices so that
 * load from other work on the machine falls on both alike:
 *
 *   (a)  a one-row INSERT, one durable commit each, single client;
 *   (a') the rows an append must write, alone: a gate step makes one record
 *        durable and, in the same transaction, moves its journal's head and
 *        the effect's row (the projection claims and compare-and-set read).
 *        Those three writes as one plain statement with nothing else (no
 *        function, no locks taken before them, no checks, no hash), against
 *        copies of the installed tables with all their indexes, are the
 *        least an append can cost here; a' ÷ a is therefore the most
 *        b ÷ (a/4) can reach on this server.
 */
import pg from 'pg'
import { quoteSchema } from '../../src/core/stores/postgres/identifier.js'

const SLICES = 10
const TABLES = ['journal_records', 'journals', 'effects']

export async function pgBaselineRates(url: string, schema: string, seconds: number): Promise<{ commit: number; floor: number }> {
  const s = quoteSchema(schema)
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    await c.query('CREATE TABLE bench_commit (id bigserial primary key, v text)')
    for (const t of TABLES) await c.query(`CREATE TABLE ${s}.floor_${t} (LIKE ${s}.${t} INCLUDING ALL)`)
    await c.query(`INSERT INTO ${s}.floor_journals VALUES ('floor', 0, $1)`, ['0'.repeat(64)])
    await c.query(
      `INSERT INTO ${s}.floor_effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
       VALUES ('e', 'floor', 'floor', 'noop', 'noop', 1, '{}', 'PROPOSED', 0, '{}', now(), now())`,
    )
    const floor = `WITH rec AS (
        INSERT INTO ${s}.floor_journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash)
        VALUES ('floor', $1, 'e', $2, $3, '{}', $4, $4)),
      head AS (UPDATE ${s}.floor_journals SET head_seq = $1, head_hash = $4 WHERE journal = 'floor')
      UPDATE ${s}.floor_effects SET state = $2, last_seq = $1, detail = '{}', updated_at = $3::timestamptz WHERE id = 'e'`
    const hash = 'a'.repeat(64)
    const row = 'x'.repeat(200)
    let commits = 0
    let floors = 0
    const slice = (seconds * 1000) / SLICES
    for (let i = 0; i < SLICES; i++) {
      let end = performance.now() + slice / 2
      while (performance.now() < end) {
        await c.query({ name: 'commit', text: 'INSERT INTO bench_commit (v) VALUES ($1)', values: [row] })
        commits++
      }
      end = performance.now() + slice / 2
      while (performance.now() < end) {
        floors++
        // Alternating states, as steps do: the row's indexed state changes every time.
        await c.query({ name: 'floor', text: floor, values: [floors, floors % 2 ? 'AUTHORIZED' : 'DISPATCHED', new Date().toISOString(), hash] })
      }
    }
    return { commit: commits / (seconds / 2), floor: floors / (seconds / 2) }
  } finally {
    await c.query('DROP TABLE IF EXISTS bench_commit').catch(() => {})
    for (const t of TABLES) await c.query(`DROP TABLE IF EXISTS ${s}.floor_${t}`).catch(() => {})
    await c.end()
  }
}
