/**
 * bench/relay: draining a ready backlog through PostgreSQL.
 *
 * In one run, on one embedded PostgreSQL server, each in a database of its own:
 *   - Interlock: `n` ready effects to a no-op tier-1 target, drained by 1 and
 *     by 4 relay processes (each effect: claim with a lease, premises checked,
 *     DISPATCHED durable before apply, COMMITTED with a signed receipt);
 *   - pg-boss and graphile-worker: `n` no-op jobs, drained by 1 and by 4
 *     worker processes;
 *   - DBOS: `n` workflows of one no-op step enqueued on a DBOS queue, drained
 *     by 1 and by 4 DBOS processes (dbos.ts);
 *   - Restate: `n` invocations of a handler making one `ctx.run`, sent to a
 *     restate-server of its own (its own storage, not PostgreSQL), the
 *     handler served by 1 and by 4 Node processes (restate.ts).
 * Reported: items/s and CPU per item for each, and the relay's ratio to each
 * durable peer at the same process count, ending with the line
 * `relay ÷ graphile-worker: <r1> (1 process), <r4> (4 processes)`.
 *
 *   npx tsx bench/relay/run.ts [--effects 100000] [--concurrency 256] [--only interlock,pgboss,graphile,dbos,restate] [--procs 1,4] [--profile DIR]
 *                              [--waits] [--flush-delay-us 1000]
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { startTestPostgres } from '../../test/helpers/postgres-server.js'
import { machineCpuSeconds, serverCpuSeconds } from './cpu.js'
import { fillDbos } from './dbos.js'
import { drainRestate } from './restate.js'
import { slowFlushes } from './slow-flush.js'
import { fillGraphile, fillInterlock, fillPgBoss, REMAINING, THREADS } from './fill.js'

const args = process.argv.slice(2)
const opt = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback)
const N = Number(opt('--effects', '100000'))
const CONCURRENCY = Number(opt('--concurrency', '256'))
const SYSTEMS = opt('--only', 'interlock,pgboss,graphile,dbos,restate').split(',')
const PROCS = opt('--procs', '1,4').split(',').map(Number)
// --flush-delay-us N: each of the server's flushes N µs slower, as on a cloud volume (slow-flush.ts).
const FLUSH_DELAY_US = Number(opt('--flush-delay-us', '0'))
/** The wait event of a commit waiting for the lock NOTIFY takes at commit (notify-lock.ts). */
const NOTIFY_LOCK = 'Lock/object'
// --waits: sample what the workers' server processes wait on during each drain (pg_stat_activity every 5 ms).
const WAITS = args.includes('--waits')
// --profile DIR: each worker writes a V8 CPU profile there (for finding where the time goes).
const PROFILE = args.includes('--profile') ? ['--cpu-prof', `--cpu-prof-dir=${opt('--profile', '/tmp')}`] : []
const FILL: Record<string, (url: string, n: number, concurrency: number) => Promise<void>> = { interlock: fillInterlock, pgboss: fillPgBoss, graphile: fillGraphile, dbos: fillDbos }
const NAMES: Record<string, string> = { interlock: 'relay', pgboss: 'pg-boss', graphile: 'graphile-worker', dbos: 'dbos', restate: 'restate' }

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const loadBefore = loadavg()
// fsync, synchronous_commit and full_page_writes on: every system pays for durable commits.
const fastFlushes = FLUSH_DELAY_US > 0 ? slowFlushes(FLUSH_DELAY_US) : () => {}
const server = await startTestPostgres({ durable: true })
fastFlushes()
if (!server.url) throw new Error(server.error)
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
const dataDir = (await admin.query<{ setting: string }>(`SELECT setting FROM pg_settings WHERE name = 'data_directory'`)).rows[0]!.setting
const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])

interface Result {
  system: string
  procs: number
  seconds: number
  perSecond: number
  /** CPU per item, µs: the workers', the server's, and the machine's share used (busy ÷ all cores) during the drain. */
  workerUs: number
  serverUs: number
  machineBusy: number
  /** --waits: the share of samples in which some worker's server process waited on each wait event. */
  waits?: Map<string, number>
}
const results: Result[] = []

try {
  for (const procs of PROCS) {
    for (const system of SYSTEMS) {
      if (system === 'restate') {
        process.stderr.write(`${system} × ${procs}: `)
        const r = await drainRestate(N, procs, (s) => process.stderr.write(s))
        results.push({ system, procs, seconds: r.seconds, perSecond: N / r.seconds, workerUs: (r.workerSeconds * 1e6) / N, serverUs: (r.serverSeconds * 1e6) / N, machineBusy: r.machineBusy })
        process.stderr.write(`${(N / r.seconds).toFixed(0)}/s (${r.seconds.toFixed(1)} s)\n`)
        continue
      }
      const dbName = `bench_${system}_${procs}`
      await admin.query(`DROP DATABASE IF EXISTS ${dbName}`)
      await admin.query(`CREATE DATABASE ${dbName}`)
      const url = new URL(server.url)
      url.pathname = `/${dbName}`
      process.stderr.write(`${system} × ${procs}: filling ${N}... `)
      await FILL[system]!(url.toString(), N, CONCURRENCY)
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

console.log(`\nbench/relay: ${N} ready items, no-op handler, ${CONCURRENCY} in flight per process, embedded PostgreSQL (fsync on${FLUSH_DELAY_US > 0 ? `, each flush ${FLUSH_DELAY_US} µs slower` : ''}), Interlock effects over ${THREADS} journals`)
console.log(`machine load (/proc/loadavg): ${loadBefore} before, ${loadavg()} after; restate's "server" is restate-server (its own RocksDB), the others' the PostgreSQL server\n`)
console.log('system          procs   items/s   seconds   workers µs/item   server µs/item   machine busy')
for (const r of results) {
  console.log(
    `${r.system.padEnd(15)} ${String(r.procs).padStart(5)} ${r.perSecond.toFixed(0).padStart(9)} ${r.seconds.toFixed(1).padStart(9)} ${r.workerUs.toFixed(0).padStart(17)} ${r.serverUs.toFixed(0).padStart(16)} ${`${(r.machineBusy * 100).toFixed(0)}%`.padStart(14)}`,
  )
}
if (WAITS) {
  console.log('\nwaits (share of 5 ms samples in which some worker connection waited on it: the NOTIFY lock at commit, then the five most seen):')
  for (const r of results) {
    const top = [...(r.waits ?? [])].filter(([w]) => w !== NOTIFY_LOCK).sort((a, b) => b[1] - a[1]).slice(0, 5)
    const share = (x: number) => `${(x * 100).toFixed(x > 0 && x < 0.01 ? 1 : 0)}%`
    console.log(`${r.system.padEnd(15)} ${String(r.procs).padStart(5)}  ${NOTIFY_LOCK} ${share(r.waits?.get(NOTIFY_LOCK) ?? 0)}; ${top.map(([w, x]) => `${w} ${share(x)}`).join(', ')}`)
  }
  console.log('')
}
// The relay's ratio to each peer at each process count; graphile-worker's line last, as the run's last line.
const ratio = (peer: string) => {
  const parts = PROCS.flatMap((procs) => {
    const own = results.find((r) => r.system === 'interlock' && r.procs === procs)
    const other = results.find((r) => r.system === peer && r.procs === procs)
    return own && other ? [`${(own.perSecond / other.perSecond).toFixed(2)} (${procs} process${procs === 1 ? '' : 'es'})`] : []
  })
  return parts.length > 0 ? `relay ÷ ${NAMES[peer]}: ${parts.join(', ')}` : undefined
}
console.log('')
for (const peer of ['pgboss', 'dbos', 'restate', 'graphile']) {
  const line = ratio(peer)
  if (line) console.log(line)
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
  const output = workers.map((w) => {
    let text = ''
    w.stdout!.on('data', (d: Buffer) => (text += d.toString()))
    return () => text
  })
  const serverBefore = serverCpuSeconds(postmaster)
  const machineBefore = machineCpuSeconds()
  const started = performance.now()
  for (const w of workers) w.stdin!.write('go\n')
  let remaining = N
  const sampling = WAITS ? sampleWaits(url, () => remaining > 0) : undefined
  while (remaining > 0) {
    // Counting the backlog costs the server a scan: ask 4 times a second, not more, so the
    // measurement does not slow what it measures (±0.25 s on runs of tens of seconds).
    await new Promise((r) => setTimeout(r, 250))
    remaining = (await client.query<{ n: number }>(REMAINING[system]!)).rows[0]!.n
  }
  const seconds = (performance.now() - started) / 1000
  const waits = await sampling
  const serverSeconds = serverCpuSeconds(postmaster) - serverBefore
  const machineAfter = machineCpuSeconds()
  await client.end()
  const exited = workers.map((w) => once(w, 'exit'))
  for (const w of workers) w.kill('SIGTERM')
  await Promise.all(exited)
  // Each worker's last line: what it did and its CPU from "go" to the stop signal (worker.ts).
  const workerSeconds = output.map((text) => Number(JSON.parse(text().trim().split('\n').at(-1)!).cpuSeconds)).reduce((a, b) => a + b, 0)
  return {
    system,
    procs,
    seconds,
    perSecond: N / seconds,
    workerUs: (workerSeconds * 1e6) / N,
    serverUs: (serverSeconds * 1e6) / N,
    machineBusy: (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total),
    waits,
  }
}

/**
 * While `running()`, every 5 ms: which wait events the database's other
 * connections (the workers') are in. Lock/object on a database-less object
 * is the lock NOTIFY takes at commit (notify-lock.ts); IO/WalSync and
 * LWLock/WALWrite the WAL flush.
 */
async function sampleWaits(url: string, running: () => boolean): Promise<Map<string, number>> {
  const sampler = new pg.Client({ connectionString: url })
  await sampler.connect()
  const seen = new Map<string, number>()
  let samples = 0
  try {
    while (running()) {
      const { rows } = await sampler.query<{ w: string }>(
        `SELECT DISTINCT wait_event_type || '/' || wait_event AS w FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event IS NOT NULL AND state = 'active'`,
      )
      samples++
      for (const { w } of rows) seen.set(w, (seen.get(w) ?? 0) + 1)
      await new Promise((r) => setTimeout(r, 5))
    }
  } finally {
    await sampler.end()
  }
  return new Map([...seen].map(([w, n]) => [w, n / Math.max(1, samples)]))
}
