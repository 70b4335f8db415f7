/**
 * bench/relay: draining a ready backlog through PostgreSQL.
 *
 * In one run, on one embedded PostgreSQL server, each in a database of its own:
 *   - Interlock: `n` ready effects to a no-op tier-1 target, drained by 1 and
 *     by 4 relay processes (each effect: claim with a lease, premises checked,
 *     DISPATCHED durable before apply, COMMITTED with a signed receipt);
 *   - pg-boss and graphile-worker: `n` no-op jobs, drained by 1 and by 4
 *     worker processes.
 * Reported: items/s for each, and Interlock's ratio to the faster peer at the
 * same process count (goal: ≥ 1).
 *
 *   npx tsx bench/relay/run.ts [--effects 100000] [--concurrency 64] [--only interlock,pgboss,graphile] [--procs 1,4] [--profile DIR]
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import pg from 'pg'
import { startTestPostgres } from '../../test/helpers/postgres-server.js'
import { fillGraphile, fillInterlock, fillPgBoss, REMAINING, THREADS } from './fill.js'

const args = process.argv.slice(2)
const opt = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback)
const N = Number(opt('--effects', '100000'))
const CONCURRENCY = Number(opt('--concurrency', '64'))
const SYSTEMS = opt('--only', 'interlock,pgboss,graphile').split(',')
const PROCS = opt('--procs', '1,4').split(',').map(Number)
// --profile DIR: each worker writes a V8 CPU profile there (for finding where the time goes).
const PROFILE = args.includes('--profile') ? ['--cpu-prof', `--cpu-prof-dir=${opt('--profile', '/tmp')}`] : []
const FILL: Record<string, (url: string, n: number) => Promise<void>> = { interlock: fillInterlock, pgboss: fillPgBoss, graphile: fillGraphile }

// fsync, synchronous_commit and full_page_writes on: every system pays for durable commits.
const server = await startTestPostgres({ durable: true })
if (!server.url) throw new Error(server.error)
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()

interface Result {
  system: string
  procs: number
  seconds: number
  perSecond: number
}
const results: Result[] = []

try {
  for (const procs of PROCS) {
    for (const system of SYSTEMS) {
      const dbName = `bench_${system}_${procs}`
      await admin.query(`DROP DATABASE IF EXISTS ${dbName}`)
      await admin.query(`CREATE DATABASE ${dbName}`)
      const url = new URL(server.url)
      url.pathname = `/${dbName}`
      process.stderr.write(`${system} × ${procs}: filling ${N}... `)
      await FILL[system]!(url.toString(), N)
      const r = await drain(system, url.toString(), procs)
      results.push(r)
      process.stderr.write(`${r.perSecond.toFixed(0)}/s (${r.seconds.toFixed(1)} s)\n`)
      await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`)
    }
  }
} finally {
  await admin.end()
  await server.stop()
}

console.log(`\nbench/relay: ${N} ready items, no-op handler, ${CONCURRENCY} in flight per process, embedded PostgreSQL (fsync on), Interlock effects over ${THREADS} journals\n`)
console.log('system          procs   items/s   seconds')
for (const r of results) console.log(`${r.system.padEnd(15)} ${String(r.procs).padStart(5)} ${r.perSecond.toFixed(0).padStart(9)} ${r.seconds.toFixed(1).padStart(9)}`)
for (const procs of PROCS) {
  const own = results.find((r) => r.system === 'interlock' && r.procs === procs)
  const peers = results.filter((r) => r.system !== 'interlock' && r.procs === procs)
  if (!own || peers.length === 0) continue
  const best = peers.reduce((a, b) => (a.perSecond >= b.perSecond ? a : b))
  console.log(`${procs} process(es): Interlock ÷ ${best.system} (faster peer) = ${(own.perSecond / best.perSecond).toFixed(2)} (goal ≥ 1)`)
}

async function drain(system: string, url: string, procs: number): Promise<Result> {
  const workers: ChildProcess[] = []
  for (let i = 0; i < procs; i++) {
    const child = spawn(process.execPath, [...PROFILE, '--import', 'tsx', 'bench/relay/worker.ts', system, url, String(CONCURRENCY)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    workers.push(child)
  }
  await Promise.all(workers.map((w) => once(w.stdout!, 'data')))
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const started = performance.now()
  for (const w of workers) w.stdin!.write('go\n')
  let remaining = N
  while (remaining > 0) {
    // Counting the backlog costs the server a scan: ask 4 times a second, not more, so the
    // measurement does not slow what it measures (±0.25 s on runs of tens of seconds).
    await new Promise((r) => setTimeout(r, 250))
    remaining = (await client.query<{ n: number }>(REMAINING[system]!)).rows[0]!.n
  }
  const seconds = (performance.now() - started) / 1000
  await client.end()
  for (const w of workers) w.kill('SIGTERM')
  await Promise.all(workers.map((w) => once(w, 'exit')))
  return { system, procs, seconds, perSecond: N / seconds }
}
