/** Randomized crash schedules on PostgreSQL through inline gates (see randomized.test.ts). */
import { describe } from 'vitest'
import { batchTest } from './batch-test.js'

const SCHEDULES = Number(process.env.INTERLOCK_CRASH_SCHEDULES_PG ?? 200)

describe('randomized crash schedules', () => {
  // Seeds differ per file so together they cover more schedules.
  batchTest({ label: 'PostgreSQL', store: 'postgres', mode: 'inline', firstSeed: 1_000_001, count: SCHEDULES, minCrashShare: 0.5 })
})
