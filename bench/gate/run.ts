/**
 * bench/gate: how close the gate comes to the disk's own limit.
 *
 * In one run, on the same disk:
 *   (a) raw appends/s: write a small record and fdatasync it, in a loop;
 *   (a') the rows an append must write, alone, on a SQLite journal;
 *   (b) sequential gate.submit to a no-op tier-1 target on SQLite;
 *   (c) the same with 64 submits in flight (group commit).
 * (a), (a') and (b) run in alternating slices (sqlite-baselines.ts), so load
 * from other work falls on all three alike.
 * An effect no rule holds needs two durable commits (PROPOSED, AUTHORIZED and
 * DISPATCHED in one, after the premise check; then its outcome), so a/2 is
 * the physical bound for (b). The ratio is kept against a/4, the bound of the
 * four commits an effect used to need: b ÷ (a/4) (goal ≥ 1.2, i.e.
 * b ≥ 0.6 × a/2), 2·a' ÷ a (about the most b ÷ (a/4) can reach with this
 * schema: two commits of an append's rows), c ÷ b (goal ≥ 4), and the median
 * time of one effect beside that of one raw commit: what the gate adds to its
 * two commits is p50(b) − 2 × p50(a).
 * With --postgres URL (or INTERLOCK_BENCH_DATABASE_URL, or an embedded PostgreSQL
 * with fsync on when neither is given and --postgres is passed without a value),
 * the same against PostgreSQL's single-client durable commit rate, plus (a'):
 * the rows an append must write, alone, whose rate over (a) bounds b ÷ (a/4).
 *
 *   npx tsx bench/gate/run.ts [--seconds 5] [--postgres [URL]]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Gate } from '../../src/core/gate.js'
import { openStore } from '../../src/core/stores/open.js'
import { install } from '../../src/core/stores/migrate.js'
import type { PostgresStoreConfig, StoreConfig } from '../../src/core/config/types.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { pgBaselines } from './postgres-baselines.js'
import { sqliteBaselines } from './sqlite-baselines.js'

const args = process.argv.slice(2)
const seconds = Number(args[args.indexOf('--seconds') + 1] || 0) || 5
const pgIndex = args.indexOf('--postgres')

const noop: EffectTarget = {
  name: 'noop',
  tier: 1,
  validatePremises: async () => [],
  apply: async (e) => ({ ok: e.id }),
}

async function submits(config: StoreConfig, inFlight: number, tag: string): Promise<number> {
  const store = await openStore(config)
  const gate = new Gate({ store, targets: [noop] })
  let i = 0
  let done = 0
  const end = performance.now() + seconds * 1000
  const start = performance.now()
  async function worker(): Promise<void> {
    while (performance.now() < end) {
      const out = await gate.submit({ thread: `bench-${tag}`, target: 'noop', action: 'noop', args: { i: i++ } })
      if (out.status !== 'committed') throw new Error(`unexpected outcome ${out.status}`)
      done++
    }
  }
  await Promise.all(Array.from({ length: inFlight }, worker))
  const rate = done / ((performance.now() - start) / 1000)
  await gate.close()
  await store.close()
  return rate
}

function line(label: string, value: number, unit = '/s'): void {
  // Ratios (no unit) need two decimals: 0.75 and 0.84 are on either side of a goal.
  console.log(`${label.padEnd(58)} ${value.toFixed(unit ? 1 : 2).padStart(10)} ${unit}`)
}

/** p50 of one effect beside p50 of one raw commit, and what the gate adds to its two commits. */
function latency(store: string, commitMs: number, effectMs: number): void {
  line(`p50 one raw commit (a), ${store}`, commitMs * 1000, 'µs')
  line(`p50 one effect (b), ${store}`, effectMs * 1000, 'µs')
  line(`p50 added per effect, b − 2 × a, ${store}`, (effectMs - 2 * commitMs) * 1000, 'µs')
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-'))
  try {
    console.log(`bench/gate: ${seconds}s per measurement, disk of ${dir}`)
    const { commit: a, floor: af, sequential: b, commitP50Ms: al, sequentialP50Ms: bl } = await sqliteBaselines(dir, noop, seconds)
    line('(a) raw write+fdatasync appends', a)
    line("(a') the rows an append writes, alone, SQLite", af)
    line('(b) sequential gate.submit, SQLite, no-op tier 1', b, 'effects/s')
    const sqlite: StoreConfig = { kind: 'sqlite', path: join(dir, 'journal.db') }
    const c = await submits(sqlite, 64, 'par')
    line('(c) 64 submits in flight, SQLite', c, 'effects/s')
    line('b ÷ (a/4)   goal ≥ 1.2', b / (a / 4), '')
    line("2·a' ÷ a    about the most b ÷ (a/4) can reach here", (2 * af) / a, '')
    line('c ÷ b       goal ≥ 4', c / b, '')
    latency('SQLite', al, bl)

    if (pgIndex >= 0) {
      let url = args[pgIndex + 1]?.startsWith('postgres') ? args[pgIndex + 1] : process.env.INTERLOCK_BENCH_DATABASE_URL
      let stop: (() => Promise<void>) | undefined
      if (!url) {
        const { startTestPostgres } = await import('../../test/helpers/postgres-server.js')
        // fsync and synchronous_commit on: the baseline and the gate both pay for durable commits.
        const server = await startTestPostgres({ durable: true })
        if (server.error) throw new Error(`embedded PostgreSQL did not start: ${server.error}`)
        url = server.url
        stop = () => server.stop()
      }
      try {
        const pgConfig: PostgresStoreConfig = { kind: 'postgres', url, schema: 'interlock_bench' }
        await install(pgConfig)
        // (a), (a') and (b) in alternating slices, so load from elsewhere falls on all three alike (postgres-baselines.ts).
        const { commit: pa, floor: pf, sequential: pb, commitP50Ms: pal, sequentialP50Ms: pbl } = await pgBaselines(pgConfig, noop, seconds)
        line('(a) PostgreSQL single-client commits', pa)
        line("(a') the three rows an append writes, one plain statement", pf)
        line('(b) sequential gate.submit, PostgreSQL', pb, 'effects/s')
        const pc = await submits(pgConfig, 64, 'pg-par')
        line('(c) 64 submits in flight, PostgreSQL', pc, 'effects/s')
        line('b ÷ (a/4)   goal ≥ 1.2', pb / (pa / 4), '')
        line("2·a' ÷ a    about the most b ÷ (a/4) can reach here", (2 * pf) / pa, '')
        line('c ÷ b       goal ≥ 4', pc / pb, '')
        latency('PostgreSQL', pal, pbl)
      } finally {
        await stop?.()
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
