/** Runs a range of seeds on one rig and gathers the failures (each with its replay command). */
import type { NegativeControl } from './controls.js'
import { verifyJournal } from './invariants.js'
import type { Rig } from './rig.js'
import { runRelaySchedule } from './run-relay-schedule.js'
import { runSchedule } from './run-schedule.js'
import { describeSchedule, makeSchedule } from './schedule.js'

/** Who carries the effects: inline gates, or the outbox drained by relays. */
export type Mode = 'inline' | 'relay'

export interface BatchResult {
  store: string
  mode: Mode
  /** The negative control the run was under, if any. */
  control?: string
  schedules: number
  failures: { seed: number; schedule: string; crash?: string; violations: string[] }[]
  crashes: number
  outcomes: Record<string, number>
  /** Whole-journal verification at the end. */
  journal: string[]
  ms: number
}

export interface BatchOptions {
  onEach?: (done: number) => void
  mode?: Mode
  /** A negative control (controls.ts) every process of every schedule applies: the run must then fail. */
  control?: NegativeControl
}

export async function runBatch(rig: Rig, firstSeed: number, count: number, { onEach, mode = 'inline', control }: BatchOptions = {}): Promise<BatchResult> {
  const started = performance.now()
  const run = mode === 'relay' ? runRelaySchedule : runSchedule
  const result: BatchResult = { store: rig.config.kind, mode, control: control?.name, schedules: count, failures: [], crashes: 0, outcomes: {}, journal: [], ms: 0 }
  for (let seed = firstSeed; seed < firstSeed + count; seed++) {
    const schedule = makeSchedule(seed)
    let r
    try {
      r = await run(rig, schedule, control)
    } catch (err) {
      r = { seed, violations: [`the run itself failed: ${(err as Error).stack ?? String(err)}`], states: [], crash: undefined }
    }
    if (r.crash) result.crashes++
    for (const s of r.states) result.outcomes[s] = (result.outcomes[s] ?? 0) + 1
    if (r.violations.length > 0) result.failures.push({ seed, schedule: describeSchedule(schedule), crash: r.crash, violations: r.violations })
    onEach?.(seed - firstSeed + 1)
  }
  result.journal = await verifyJournal(rig.store)
  result.ms = performance.now() - started
  return result
}

export function formatFailures(r: BatchResult): string {
  return r.failures
    .map((f) => `${f.schedule}\n  crash: ${f.crash ?? 'none'}\n  ${f.violations.join('\n  ')}\n  replay: npm run crash -- --seed ${f.seed} --store ${r.store} --mode ${r.mode}${r.control ? ` --control ${r.control}` : ''}`)
    .join('\n')
}
