/** A range of notarized schedules on one rig: failures (each with its schedule), crash and fault counts, end states. */
import { notaryRig, type NotaryRig } from './notary-rig.js'
import { describeNotarySchedule, makeNotarySchedule } from './notary-schedule.js'
import { runNotarySchedule } from './run-notary-schedule.js'

export interface NotaryBatch {
  schedules: number
  failures: string[]
  /** How many schedules had each kind of trouble. */
  seen: { crashed: number; notaryDown: number; serviceDied: number; adversary: number; tampered: number }
  /** How each effect ended (AMBIGUOUS with its cause). */
  ends: Record<string, number>
  ms: number
}

export async function runNotaryBatch(rig: NotaryRig, firstSeed: number, count: number, withoutNotary = false): Promise<NotaryBatch> {
  const started = performance.now()
  const b: NotaryBatch = { schedules: count, failures: [], seen: { crashed: 0, notaryDown: 0, serviceDied: 0, adversary: 0, tampered: 0 }, ends: {}, ms: 0 }
  for (let seed = firstSeed; seed < firstSeed + count; seed++) {
    const s = makeNotarySchedule(seed)
    let r
    try {
      r = await runNotarySchedule(rig, s, withoutNotary)
    } catch (err) {
      r = { seed, violations: [`the run itself failed: ${(err as Error).stack ?? String(err)}`], ends: [], crash: undefined }
    }
    if (r.crash) b.seen.crashed++
    if (s.notaryDown) b.seen.notaryDown++
    if (s.effects.some((e) => e.serviceDies !== 'none')) b.seen.serviceDied++
    if (s.adversary.length > 0) b.seen.adversary++
    if (s.tampered) b.seen.tampered++
    for (const e of r.ends) b.ends[e] = (b.ends[e] ?? 0) + 1
    if (r.violations.length > 0) b.failures.push(`${describeNotarySchedule(s)}\n  crash: ${r.crash ?? 'none'}\n  ${r.violations.join('\n  ')}`)
  }
  b.ms = performance.now() - started
  return b
}

export { notaryRig }
