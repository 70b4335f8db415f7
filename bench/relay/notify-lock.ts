/**
 * bench/relay/notify-lock.ts: does PostgreSQL's lock on NOTIFY at commit
 * limit several writers?
 *
 * A transaction that issued NOTIFY takes, at commit, one lock for the whole
 * cluster and holds it until its commit is done, WAL flush included
 * (PreCommit_Notify in src/backend/commands/async.c: queue entries must be
 * in commit order). Durable commits of notifying transactions therefore
 * cannot share a flush; without NOTIFY, concurrent commits are flushed
 * together (group commit).
 *
 * In one run, on one embedded server with fsync on, W writers (1, 2, 4 …)
 * each commit one small write per statement, in slices alternated so load
 * on the machine falls on every variant alike:
 *   - plain:          INSERT;
 *   - notify-inside:  INSERT and pg_notify in the same statement (how the
 *                     store's append() notifies);
 *   - notify-after:   INSERT, then pg_notify in a statement of its own (a
 *                     transaction that writes nothing else: it commits
 *                     without a WAL flush, so it holds the lock briefly).
 * One connection LISTENs on the channel throughout, as relays do. Reported:
 * commits per second, and the share of samples of pg_stat_activity (every
 * 5 ms) in which some writer waited for the lock (wait event Lock/object)
 * or for the WAL flush (IO/WalSync, LWLock/WALWrite).
 *
 *   npx tsx bench/relay/notify-lock.ts [--writers 1,2,4] [--seconds 3] [--slices 3] [--rows 1] [--flush-delay-us 1000]
 *
 * --rows N: rows per statement (a relay's batch writes tens).
 * --flush-delay-us N: every fsync and fdatasync of the server takes N µs
 * more (slow-flush.ts), as on a cloud volume (about 1 ms); this machine's
 * disk flushes in ~0.06 ms.
 */
import pg from 'pg'
import { startTestPostgres } from '../../test/helpers/postgres-server.js'
import { slowFlushes } from './slow-flush.js'

const args = process.argv.slice(2)
const opt = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback)
const WRITERS = opt('--writers', '1,2,4').split(',').map(Number)
const SECONDS = Number(opt('--seconds', '3'))
const SLICES = Number(opt('--slices', '3'))
const ROWS = Number(opt('--rows', '1'))
const FLUSH_DELAY_US = Number(opt('--flush-delay-us', '0'))
const VARIANTS = ['plain', 'notify-inside', 'notify-after'] as const
type Variant = (typeof VARIANTS)[number]

const INSERT = `INSERT INTO bench_notify (v) SELECT $1 FROM generate_series(1, ${ROWS})`
const STATEMENTS: Record<Variant, string[]> = {
  plain: [INSERT],
  'notify-inside': [`WITH w AS (${INSERT} RETURNING 1) SELECT pg_notify('bench_notify', 'x') FROM (SELECT count(*) FROM w) c`],
  'notify-after': [INSERT, `SELECT pg_notify('bench_notify', 'x')`],
}

interface Tally {
  commits: number
  seconds: number
  samples: number
  lockWaits: number
  flushWaits: number
}

const fastFlushes = FLUSH_DELAY_US > 0 ? slowFlushes(FLUSH_DELAY_US) : () => {}
const server = await startTestPostgres({ durable: true })
fastFlushes()
if (!server.url) throw new Error(server.error)
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
await admin.query('DROP TABLE IF EXISTS bench_notify')
await admin.query('CREATE TABLE bench_notify (id bigserial PRIMARY KEY, v text NOT NULL)')
const listener = new pg.Client({ connectionString: server.url })
await listener.connect()
let heard = 0
listener.on('notification', () => heard++)
await listener.query('LISTEN bench_notify')

const tallies = new Map<string, Tally>()
try {
  for (let slice = 0; slice < SLICES; slice++) {
    for (const writers of WRITERS) {
      for (const variant of VARIANTS) {
        const t = await measure(variant, writers, (SECONDS * 1000) / SLICES)
        const key = `${writers} ${variant}`
        const sum = tallies.get(key) ?? { commits: 0, seconds: 0, samples: 0, lockWaits: 0, flushWaits: 0 }
        for (const k of Object.keys(sum) as (keyof Tally)[]) sum[k] += t[k]
        tallies.set(key, sum)
        await admin.query('TRUNCATE bench_notify')
      }
    }
  }
} finally {
  await listener.end()
  await admin.end()
  await server.stop()
}

console.log(`\nnotify-lock: ${ROWS} row(s) per durable commit, embedded PostgreSQL (fsync on)${FLUSH_DELAY_US > 0 ? `, each flush ${FLUSH_DELAY_US} µs slower` : ''}; ${heard} notifications heard\n`)
console.log('writers  variant          commits/s  ÷ plain   waiting on the NOTIFY lock   waiting on the WAL flush')
for (const writers of WRITERS) {
  const plain = rate(tallies.get(`${writers} plain`)!)
  for (const variant of VARIANTS) {
    const t = tallies.get(`${writers} ${variant}`)!
    const pct = (n: number) => `${((100 * n) / Math.max(1, t.samples)).toFixed(0)}%`
    console.log(
      `${String(writers).padStart(7)}  ${variant.padEnd(15)} ${rate(t).toFixed(0).padStart(10)} ${(rate(t) / plain).toFixed(2).padStart(8)} ${pct(t.lockWaits).padStart(28)} ${pct(t.flushWaits).padStart(26)}`,
    )
  }
}

function rate(t: Tally): number {
  return t.commits / t.seconds
}

async function measure(variant: Variant, writers: number, ms: number): Promise<Tally> {
  const clients = await Promise.all(
    Array.from({ length: writers }, async () => {
      const c = new pg.Client({ connectionString: server.url })
      await c.connect()
      return c
    }),
  )
  const sampler = new pg.Client({ connectionString: server.url })
  await sampler.connect()
  const pids = await Promise.all(clients.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid))
  let stop = false
  let commits = 0
  const started = performance.now()
  const loops = clients.map(async (c) => {
    while (!stop) {
      for (const text of STATEMENTS[variant]) await c.query(text, text.includes('$1') ? ['x'] : [])
      commits++
    }
  })
  let samples = 0
  let lockWaits = 0
  let flushWaits = 0
  const sampling = (async () => {
    while (!stop) {
      const { rows } = await sampler.query<{ lock: boolean; flush: boolean }>(
        `SELECT bool_or(wait_event_type = 'Lock' AND wait_event = 'object') AS lock,
                bool_or((wait_event_type = 'IO' AND wait_event = 'WalSync') OR (wait_event_type = 'LWLock' AND wait_event = 'WALWrite')) AS flush
         FROM pg_stat_activity WHERE pid = ANY($1)`,
        [pids],
      )
      samples++
      if (rows[0]?.lock) lockWaits++
      if (rows[0]?.flush) flushWaits++
      await new Promise((r) => setTimeout(r, 5))
    }
  })()
  await new Promise((r) => setTimeout(r, ms))
  stop = true
  await Promise.all(loops)
  const seconds = (performance.now() - started) / 1000
  await sampling
  await Promise.all([...clients, sampler].map((c) => c.end()))
  return { commits, seconds, samples, lockWaits, flushWaits }
}

