/**
 * Randomized crash schedules on every CI run (schedule.ts, crash-model.ts):
 * 1,000 seeds on SQLite through inline gates, each judged by the invariants
 * (invariants.ts). PostgreSQL and relay mode have files of their own, so the
 * test workers run them side by side. A failure prints every failing seed
 * with the command that replays it: `npm run crash -- --seed N --store <store>`.
 * `npm run soak -- --count N` runs as many as asked.
 */
import { describe } from 'vitest'
import { batchTest } from './batch-test.js'

const SCHEDULES = Number(process.env.INTERLOCK_CRASH_SCHEDULES ?? 1000)

describe('randomized crash schedules', () => {
  batchTest({ label: 'SQLite', store: 'sqlite', mode: 'inline', firstSeed: 1, count: SCHEDULES, minCrashShare: 0.5 })
})
