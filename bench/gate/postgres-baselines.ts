/**
 * bench/gate, PostgreSQL: (a), (a') and (b) measured in alternating slices,
 * so that load from other work on the machine (it shares two cores and one
 * disk) falls on all three alike and their ratios hold:
 *
 *   (a)  a one-row INSERT, one durable commit each, single client;
 *   (a') the rows an append must write, alone: a gate step makes one record
 *        durable and, in the same transaction, moves its journal's head and
 *        the effect's row (the projection claims and compare-and-set read).
 *        Those three writes as one plain statement with nothing else (no
 *        function, no locks taken before them, no checks, no hash), against
 *        copies of the installed tables with all their indexes, are the
 *        least an append can cost here; a' ÷ a is therefore the most
 *        b ÷ (a/4) can reach on this server;
 *   (b)  sequential gate.submit to a no-op tier-1 target.
 */
import pg from 'pg'
import type { PostgresStoreConfig } from '../../src/core/config/types.js'
import { Gate } from '../../src/core/gate.js'
import { openStore } from '../../src/core/stores/open.js'
import { quoteIdentifier } from '../../src/core/stores/postgres/identifier.js'
import type { EffectTarget } from '../../src/core/targets/target.js'

const SLICES = 10

function p50(ms: number[]): number {
  const sorted = [...ms].sort((x, y) => x - y)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}
const TABLES = ['journal_records', 'journals', 'effects']

export interface PgBaselines {
  commit: number
  floor: number
  sequential: number
  /** Median time of one (a) commit and of one (b) effect, ms. */
  commitP50Ms: number
  sequentialP50Ms: number
}

export async function pgBaselines(config: PostgresStoreConfig, target: EffectTarget, seconds: number): Promise<PgBaselines> {
  const s = quoteIdentifier(config.schema)
  const c = new pg.Client({ connectionString: config.url })
  await c.connect()
  const store = await openStore(config)
  const gate = new Gate({ store, targets: [target] })
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
    const n = { commit: 0, floor: 0, sequential: 0 }
    const times: Record<keyof typeof n, number[]> = { commit: [], floor: [], sequential: [] }
    const slice = (seconds * 1000) / SLICES / 3
    const during = async (key: keyof typeof n, step: () => Promise<unknown>) => {
      const end = performance.now() + slice
      while (performance.now() < end) {
        n[key]++
        const t0 = performance.now()
        await step()
        times[key].push(performance.now() - t0)
      }
    }
    for (let i = 0; i < SLICES; i++) {
      await during('commit', () => c.query({ name: 'commit', text: 'INSERT INTO bench_commit (v) VALUES ($1)', values: [row] }))
      // Alternating states, as steps do: the row's indexed state changes every time.
      await during('floor', () => c.query({ name: 'floor', text: floor, values: [n.floor, n.floor % 2 ? 'AUTHORIZED' : 'DISPATCHED', new Date().toISOString(), hash] }))
      await during('sequential', async () => {
        const out = await gate.submit({ thread: 'bench-pg-seq', target: target.name, action: 'noop', args: { i: n.sequential } })
        if (out.status !== 'committed') throw new Error(`unexpected outcome ${out.status}`)
      })
    }
    const spent = seconds / 3
    return { commit: n.commit / spent, floor: n.floor / spent, sequential: n.sequential / spent, commitP50Ms: p50(times.commit), sequentialP50Ms: p50(times.sequential) }
  } finally {
    await gate.close()
    await store.close()
    await c.query('DROP TABLE IF EXISTS bench_commit').catch(() => {})
    for (const t of TABLES) await c.query(`DROP TABLE IF EXISTS ${s}.floor_${t}`).catch(() => {})
    await c.end()
  }
}
