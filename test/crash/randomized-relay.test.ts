/**
 * Randomized crash schedules in relay mode (run-relay-schedule.ts): the
 * outbox drained by a relay that dies at its boundary while a second relay
 * competes, then a fresh relay and a reconcile pass (see randomized.test.ts).
 */
import { describe } from 'vitest'
import { batchTest } from './batch-test.js'

const SCHEDULES = Number(process.env.INTERLOCK_CRASH_SCHEDULES_RELAY ?? 60)

describe('randomized crash schedules', () => {
  batchTest({ label: 'SQLite, relay mode', store: 'sqlite', mode: 'relay', firstSeed: 3_000_001, count: SCHEDULES, minCrashShare: 0.2 })
})
