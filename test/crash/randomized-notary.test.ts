/**
 * Randomized schedules against a notarized tier-3 target (notary-schedule.ts,
 * run-notary-schedule.ts), in-process on the crash model of crash-model.ts:
 * agent crashes at every durable boundary (intend and abort included), the
 * service dying in its handler after its claim, the notary down and restarted
 * mid-run, forged, untrusted and replayed records, late requests after an
 * abort, a tampered answer. Seeds 1-500 here, 501-1,000 in
 * randomized-notary-2.test.ts (the test workers run both side by side). Each
 * prints how many schedules ran and how each effect ended; a failure lists
 * each failing seed with its schedule.
 *
 * And the negative control: the same schedules with the target reached
 * directly (tier 3, no notary) must be reported (AMBIGUOUS after a plain
 * agent crash), or the run could not tell what the notary buys.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { runNotaryBatch } from './notary-batch.js'
import { notaryBatchTest } from './notary-batch-test.js'
import { notaryRig, type NotaryRig } from './notary-rig.js'

const HALF = Number(process.env.INTERLOCK_NOTARY_SCHEDULES ?? 1000) / 2

describe('randomized schedules against a notarized tier-3 target', () => {
  notaryBatchTest(1, Math.ceil(HALF))
})

describe('the negative control: the same schedules without the notary', () => {
  let rig: NotaryRig | undefined
  afterAll(async () => {
    await rig?.close()
  })
  it('an agent crash alone leaves the plain tier-3 target AMBIGUOUS: the run reports it', async () => {
    rig = await notaryRig()
    const b = await runNotaryBatch(rig, 1, 40, true)
    console.log(`plain tier 3 (control): ${b.schedules} schedules, ${b.failures.length} reported, end states ${JSON.stringify(b.ends)}`)
    expect(b.failures.join('\n')).toMatch(/\[3\] AMBIGUOUS though the notary answered/)
    expect(b.failures.length).toBeGreaterThan(5)
  }, 120_000)
})
