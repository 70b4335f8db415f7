/**
 * The randomized crash harness from the command line.
 *
 *   npm run crash -- --seed N [--store sqlite|postgres] [--mode inline|relay]   one schedule
 *   npm run soak -- --count N [--from S] [--store sqlite|postgres] [--mode inline|relay]
 *   ... --control sendBeforeDurable|newKeyOnRetry|skipPremiseCheck|resendTier3
 *       with a negative control (controls.ts): the run must then find violations
 *
 * PostgreSQL: INTERLOCK_TEST_DATABASE_URL if set, else an embedded server
 * started for the run. Exits 1 when any invariant is violated, printing each
 * failing seed with the command that replays it.
 */
import { parseArgs } from 'node:util'
import pg from 'pg'
import { startTestPostgres } from '../helpers/postgres-server.js'
import { formatFailures, runBatch, type Mode } from './batch.js'
import { controlNamed } from './controls.js'
import { postgresRig, sqliteRig, type Rig } from './rig.js'
import { describeSchedule, makeSchedule } from './schedule.js'

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    count: { type: 'string', default: '1000' },
    from: { type: 'string', default: '1' },
    store: { type: 'string', default: 'sqlite' },
    mode: { type: 'string', default: 'inline' },
    control: { type: 'string' },
  },
})

async function withRig<T>(kind: string, fn: (rig: Rig) => Promise<T>): Promise<T> {
  if (kind === 'sqlite') {
    const rig = await sqliteRig()
    try {
      return await fn(rig)
    } finally {
      await rig.close()
    }
  }
  if (kind !== 'postgres') throw new Error(`--store must be sqlite or postgres, not ${kind}`)
  const server = await startTestPostgres()
  if (!server.url) throw new Error(server.error)
  const name = `interlock_crash_${process.pid}`
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: server.url })
    await c.connect()
    await c.query(sql).finally(() => c.end())
  }
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(server.url)
  url.pathname = `/${name}`
  const rig = await postgresRig(url.toString())
  try {
    return await fn(rig)
  } finally {
    await rig.close()
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await server.stop()
  }
}

if (values.mode !== 'inline' && values.mode !== 'relay') throw new Error(`--mode must be inline or relay, not ${values.mode}`)
const mode = values.mode as Mode
const control = values.control === undefined ? undefined : controlNamed(values.control)
const single = values.seed !== undefined
const from = Number(single ? values.seed : values.from)
const count = single ? 1 : Number(values.count)
if (single) process.stdout.write(`${describeSchedule(makeSchedule(from))}\n`)

const result = await withRig(values.store!, (rig) =>
  runBatch(rig, from, count, {
    onEach: (done) => {
      if (!single && done % 1000 === 0) process.stderr.write(`${done}/${count} schedules\n`)
    },
    mode,
    control,
  }),
)
if (result.failures.length > 0) process.stdout.write(`${formatFailures(result)}\n`)
for (const line of result.journal) process.stdout.write(`${line}\n`)
process.stdout.write(
  `${result.store} ${mode}: ${result.schedules} schedules (seeds ${from}..${from + count - 1}), ${result.crashes} crashed, ` +
    `outcomes ${JSON.stringify(result.outcomes)}, ${result.failures.length} failing, journal ${result.journal.length ? 'BROKEN' : 'verifies'}, ` +
    `${(result.ms / 1000).toFixed(1)} s\n`,
)
// Exit now: a relay-mode run can leave a timer of a dead relay behind, and the verdict is printed.
process.exit(result.failures.length > 0 || result.journal.length > 0 ? 1 : 0)
