/**
 * Randomized crash schedules on every CI run (schedule.ts, crash-model.ts):
 * 1,000 seeds on SQLite, a share on PostgreSQL and a share in relay mode
 * (outbox drained by relays, one of which dies), each judged by the
 * invariants (invariants.ts). A failure prints every failing seed with the
 * command that replays it: `npm run crash -- --seed N --store <store>`.
 * `npm run soak -- --count N` runs as many as asked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { formatFailures, runBatch } from './batch.js'
import { postgresRig, sqliteRig, type Rig } from './rig.js'

const SQLITE_SCHEDULES = Number(process.env.INTERLOCK_CRASH_SCHEDULES ?? 1000)
const POSTGRES_SCHEDULES = Number(process.env.INTERLOCK_CRASH_SCHEDULES_PG ?? 300)
const RELAY_SCHEDULES = Number(process.env.INTERLOCK_CRASH_SCHEDULES_RELAY ?? 150)
// Seeds differ per store so the two together cover more schedules.
const POSTGRES_FIRST_SEED = 1_000_001

describe('randomized crash schedules', () => {
  let pgDb: TestDatabase
  const rigs: Rig[] = []
  beforeAll(async () => {
    pgDb = await createTestDatabase()
  })
  afterAll(async () => {
    for (const r of rigs) await r.close()
    await pgDb?.drop()
  })

  it(`SQLite: ${SQLITE_SCHEDULES} schedules hold every invariant`, async () => {
    const rig = await sqliteRig()
    rigs.push(rig)
    const r = await runBatch(rig, 1, SQLITE_SCHEDULES)
    console.log(`sqlite: ${r.schedules} schedules, ${r.crashes} crashed, ${JSON.stringify(r.outcomes)}, ${(r.ms / 1000).toFixed(1)} s`)
    expect(formatFailures(r)).toBe('')
    expect(r.journal).toEqual([])
    expect(r.crashes).toBeGreaterThan(SQLITE_SCHEDULES / 2)
  }, 180_000)

  it(`SQLite, relay mode: ${RELAY_SCHEDULES} schedules hold every invariant`, async () => {
    const rig = await sqliteRig()
    rigs.push(rig)
    const r = await runBatch(rig, 3_000_001, RELAY_SCHEDULES, undefined, 'relay')
    console.log(`sqlite relay: ${r.schedules} schedules, ${r.crashes} crashed, ${JSON.stringify(r.outcomes)}, ${(r.ms / 1000).toFixed(1)} s`)
    expect(formatFailures(r)).toBe('')
    expect(r.journal).toEqual([])
  }, 180_000)

  it(`PostgreSQL: ${POSTGRES_SCHEDULES} schedules hold every invariant`, async () => {
    const rig = await postgresRig(pgDb.url)
    rigs.push(rig)
    const r = await runBatch(rig, POSTGRES_FIRST_SEED, POSTGRES_SCHEDULES)
    console.log(`postgres: ${r.schedules} schedules, ${r.crashes} crashed, ${JSON.stringify(r.outcomes)}, ${(r.ms / 1000).toFixed(1)} s`)
    expect(formatFailures(r)).toBe('')
    expect(r.journal).toEqual([])
  }, 180_000)
})
