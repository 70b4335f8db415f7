/**
 * Randomized schedules against a notarized tier-3 target (notary-schedule.ts,
 * run-notary-schedule.ts), in-process on the crash model of crash-model.ts:
 * agent crashes at every durable boundary (intend and abort included), the
 * service dying in its handler after its claim, the notary down and restarted
 * mid-run, forged, untrusted and replayed records, late requests after an
 * abort, a tampered answer. Prints how many schedules ran and how each
 * effect ended. A failure lists each failing seed with its schedule.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { verifyJournal } from './invariants.js'
import { notaryRig, type NotaryRig } from './notary-rig.js'
import { describeNotarySchedule, makeNotarySchedule } from './notary-schedule.js'
import { runNotarySchedule } from './run-notary-schedule.js'

const SCHEDULES = Number(process.env.INTERLOCK_NOTARY_SCHEDULES ?? 1000)

describe('randomized schedules against a notarized tier-3 target', () => {
  let rig: NotaryRig | undefined
  afterAll(async () => {
    await rig?.close()
  })

  it(`${SCHEDULES} schedules: never applied twice, never AMBIGUOUS without a stated cause, each effect in a safe state`, async () => {
    rig = await notaryRig()
    const started = performance.now()
    const failures: string[] = []
    const ends: Record<string, number> = {}
    const seen = { crashed: 0, notaryDown: 0, serviceDied: 0, adversary: 0, tampered: 0 }
    for (let seed = 1; seed <= SCHEDULES; seed++) {
      const s = makeNotarySchedule(seed)
      let r
      try {
        r = await runNotarySchedule(rig, s)
      } catch (err) {
        r = { seed, violations: [`the run itself failed: ${(err as Error).stack ?? String(err)}`], ends: [], crash: undefined }
      }
      if (r.crash) seen.crashed++
      if (s.notaryDown) seen.notaryDown++
      if (s.effects.some((e) => e.serviceDies !== 'none')) seen.serviceDied++
      if (s.adversary.length > 0) seen.adversary++
      if (s.tampered) seen.tampered++
      for (const e of r.ends) ends[e] = (ends[e] ?? 0) + 1
      if (r.violations.length > 0) failures.push(`${describeNotarySchedule(s)}\n  crash: ${r.crash ?? 'none'}\n  ${r.violations.join('\n  ')}`)
    }
    const ms = performance.now() - started
    console.log(`notarized tier 3: ${SCHEDULES} schedules (${JSON.stringify(seen)}), end states ${JSON.stringify(ends)}, ${(ms / 1000).toFixed(1)} s`)
    expect(failures.join('\n')).toBe('')
    expect(await verifyJournal(rig.store)).toEqual([])
    // A run that never crashed, never lost the notary or never reached COMMITTED through recovery tests nothing.
    expect(seen.crashed).toBeGreaterThan(SCHEDULES * 0.5)
    expect(seen.notaryDown).toBeGreaterThan(SCHEDULES * 0.1)
    expect(ends.COMMITTED ?? 0).toBeGreaterThan(SCHEDULES * 0.5)
  }, 240_000)
})
