/**
 * What every demo scenario shares: a scripted agent's effects, a worker
 * process killed with SIGKILL while they are in flight, recovery in this
 * process, and a row per effect setting its journal beside what the target
 * itself recorded. A scenario supplies the world (targets, effects) and how to
 * read each target's own count.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TargetConfig } from '../config/types.js'
import { toEffect, type Tier } from '../effect.js'
import { Gate } from '../gate.js'
import type { State } from '../lifecycle.js'
import type { RecoveryAction } from '../recovery.js'
import { openStore } from '../stores/open.js'
import { runWorkerUntilPaused } from './crash.js'
import { demoTargets, type DemoNotary } from './targets.js'
import type { WorkerPlan } from './worker.js'

export interface DemoRow {
  label: string
  effectId: string
  target: string
  tier: Tier
  /** A tier-3 target behind the notary (notarized): recovery asks the notary. */
  notary?: boolean
  /** States in the journal, oldest first. */
  journal: State[]
  recovery: RecoveryAction | '-'
  final: State
  /** Times the target itself recorded the effect as applied (service ledger, commits, posts). */
  applied: number
  /** Requests the target received for it, where it says (tier 1 shows the deduplicated replay). */
  requests?: number
  expected: string
  ok: boolean
}

export interface ScenarioReport {
  name: string
  title: string
  workerKilledWith: string
  rows: DemoRow[]
  /** Lines that sum up what the targets' own records show. */
  summary: string[]
  /** One line: whether the promise held, and how the effects ended. */
  verdict: string
  ok: boolean
}

export type PlannedEffect = WorkerPlan['effects'][number] & {
  /** Whether the effect is expected to reach apply (and so pause there) or to be REJECTED first. */
  stale?: boolean
}

export interface ScenarioRun {
  dir: string
  targets: Record<string, TargetConfig>
  /** Targets behind the notary, and how to reach it. */
  notary?: DemoNotary
  effects: PlannedEffect[]
  /** What the target itself recorded for this effect. */
  count(row: DemoRow): Promise<{ applied: number; requests?: number }>
  log: (line: string) => void
  timeoutMs: number
}

export async function crashAndRecover(run: ScenarioRun): Promise<{ rows: DemoRow[]; killedWith: string }> {
  const journal = join(run.dir, 'journal.db')
  const plan: WorkerPlan = { journal, targets: run.targets, effects: run.effects.map(({ stale: _stale, ...e }) => e), ...(run.notary ? { notary: run.notary } : {}) }
  const planFile = join(run.dir, 'plan.json')
  writeFileSync(planFile, JSON.stringify(plan))
  const inFlight = run.effects.filter((e) => !e.stale).length
  const killedWith = await runWorkerUntilPaused(planFile, { paused: inFlight, settled: run.effects.length - inFlight }, run.timeoutMs, run.log)
  run.log(`worker killed with ${killedWith} after ${inFlight} effects were applied and before any was COMMITTED`)

  const store = await openStore({ kind: 'sqlite', path: journal })
  const gate = new Gate({ store, targets: demoTargets(run.targets, run.notary) })
  try {
    const report = await gate.recover()
    run.log(`recover(): ${report.inFlight} effects in flight, ${report.recordsRead} journal records read`)
    const rows: DemoRow[] = []
    for (const e of run.effects) {
      const id = toEffect(e).id
      const history = await store.history(id)
      const row: DemoRow = {
        label: e.label,
        effectId: id,
        target: e.target,
        // A notarized target acts as tier 2 to the gate; the service behind it is tier 3.
        tier: run.notary?.targets.includes(e.target) ? 3 : gate.target(e.target).tier,
        ...(run.notary?.targets.includes(e.target) ? { notary: true } : {}),
        journal: history.map((r) => r.state),
        recovery: report.effects.find((r) => r.effectId === id)?.action ?? '-',
        final: history.at(-1)!.state,
        applied: 0,
        expected: '',
        ok: false,
      }
      Object.assign(row, await run.count(row))
      judge(row, Boolean(e.stale))
      rows.push(row)
    }
    return { rows, killedWith }
  } finally {
    await gate.close()
    await store.close()
  }
}

/** The scenario's last line: held or not, and how its effects ended. */
export function verdict(rows: readonly DemoRow[]): string {
  const wrong = rows.filter((r) => !r.ok).length
  if (wrong > 0) return `Verdict: the promise did NOT hold: ${wrong} of ${rows.length} effects are marked WRONG.`
  const ended = new Map<State, number>()
  for (const r of rows) ended.set(r.final, (ended.get(r.final) ?? 0) + 1)
  const counts = [...ended].map(([state, n]) => `${n} ${state}`).join(', ')
  return `Verdict: the promise holds: no effect applied twice; ${counts}.`
}

/** What the promise says must be true of each row. */
function judge(row: DemoRow, stale: boolean): void {
  if (stale) {
    row.expected = 'REJECTED, never applied'
    row.ok = row.final === 'REJECTED' && row.applied === 0
  } else if (row.notary) {
    row.expected = 'found at the notary, COMMITTED, applied once'
    row.ok = row.final === 'COMMITTED' && row.recovery === 'found-by-query' && row.applied === 1
  } else if (row.tier === 1) {
    row.expected = 'recovered with the same key, applied once'
    row.ok = row.final === 'COMMITTED' && row.recovery === 're-applied' && row.applied === 1
  } else if (row.tier === 2) {
    row.expected = 'found by query, applied once'
    row.ok = row.final === 'COMMITTED' && row.recovery === 'found-by-query' && row.applied === 1
  } else {
    row.expected = 'AMBIGUOUS, applied at most once'
    row.ok = row.final === 'AMBIGUOUS' && row.applied <= 1
  }
}
