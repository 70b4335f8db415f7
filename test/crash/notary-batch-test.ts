/** One vitest case running a range of notarized schedules on a fresh rig (split over files so workers run them side by side). */
import { afterAll, expect, it } from 'vitest'
import { verifyJournal } from './invariants.js'
import { runNotaryBatch } from './notary-batch.js'
import { notaryRig, type NotaryRig, type NotaryRigOptions } from './notary-rig.js'

/**
 * @param rigOptions the journal and the notary's store (default SQLite for both); a
 *   function, so that what it needs (a test database) is made when the case runs
 * @param name how the run is named in the log line (default: the SQLite notary)
 */
export function notaryBatchTest(firstSeed: number, count: number, rigOptions?: () => Promise<NotaryRigOptions>, name = 'notarized tier 3'): void {
  const label = `seeds ${firstSeed}-${firstSeed + count - 1}`
  let rig: NotaryRig | undefined
  afterAll(async () => {
    await rig?.close()
  })
  it(`${label}: ${count} schedules: never applied twice, never AMBIGUOUS without a stated cause, each effect in a safe state`, async () => {
    rig = await notaryRig(await rigOptions?.())
    const b = await runNotaryBatch(rig, firstSeed, count)
    console.log(`${name}, ${label}: ${b.schedules} schedules ${JSON.stringify(b.seen)}, end states ${JSON.stringify(b.ends)}, ${(b.ms / 1000).toFixed(1)} s`)
    expect(b.failures.join('\n')).toBe('')
    expect(await verifyJournal(rig.store)).toEqual([])
    // A run that seldom crashed, lost the notary or reached COMMITTED tests little.
    expect(b.seen.crashed).toBeGreaterThan(count * 0.5)
    expect(b.seen.notaryDown).toBeGreaterThanOrEqual(count * 0.1)
    expect(b.ends.COMMITTED ?? 0).toBeGreaterThan(count * 0.5)
  }, 300_000)
}
