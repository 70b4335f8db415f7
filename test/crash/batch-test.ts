/** One vitest case running a batch of schedules on a fresh rig; fails listing every failing seed. */
import { afterAll, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { formatFailures, runBatch, type Mode } from './batch.js'
import { postgresRig, sqliteRig, type Rig } from './rig.js'

export interface BatchTest {
  label: string
  store: 'sqlite' | 'postgres'
  mode: Mode
  firstSeed: number
  count: number
  /** At least this share of schedules must have crashed: a harness that never crashes tests nothing. */
  minCrashShare: number
}

export function batchTest(t: BatchTest): void {
  let rig: Rig | undefined
  let db: TestDatabase | undefined
  afterAll(async () => {
    await rig?.close()
    await db?.drop()
  })
  it(`${t.label}: ${t.count} schedules hold every invariant`, async () => {
    if (t.store === 'postgres') db = await createTestDatabase()
    rig = db ? await postgresRig(db.url) : await sqliteRig()
    const r = await runBatch(rig, t.firstSeed, t.count, { mode: t.mode })
    console.log(`${t.store} ${t.mode}: ${r.schedules} schedules, ${r.crashes} crashed, ${JSON.stringify(r.outcomes)}, ${(r.ms / 1000).toFixed(1)} s`)
    expect(formatFailures(r)).toBe('')
    expect(r.journal).toEqual([])
    expect(r.crashes).toBeGreaterThan(t.count * t.minCrashShare)
  }, 240_000)
}
