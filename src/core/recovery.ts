/**
 * Recovery after a crash: one journal read (store.scanInFlight, which also
 * verifies the chain), then DESIGN.md's table for each effect found:
 *
 * | found      | tier 1                 | tier 2                              | tier 3    |
 * |------------|------------------------|-------------------------------------|-----------|
 * | PROPOSED   | continue the normal path (premises re-checked)                          |
 * | HELD       | wait for a release                                                       |
 * | AUTHORIZED | re-check premises, dispatch (nothing was sent yet)                       |
 * | DISPATCHED | re-apply, same key     | query: found → COMMITTED, else re-apply | AMBIGUOUS |
 * | AMBIGUOUS  | wait for an operator                                                     |
 *
 * Effects this process is itself still working on are left alone. Recovery
 * assumes no other live process is working on the effects it finds (inline
 * mode); outbox mode adds leases for that.
 */
import { advance } from './advance.js'
import type { Tier } from './effect.js'
import type { GateContext } from './gate-context.js'
import type { State } from './lifecycle.js'
import type { OutcomeStatus, SubmitOutcome } from './outcome.js'

export type RecoveryAction =
  /** Continued from PROPOSED or AUTHORIZED: nothing had been sent. */
  | 'resumed'
  /** Tier 1: sent again with the same idempotency key. */
  | 're-applied'
  /** Tier 2: the target said it had already happened. */
  | 'found-by-query'
  /** Tier 2: the target said it had not happened; sent now. */
  | 'applied-after-query'
  /** Tier 3: cannot know; an operator must resolve it. */
  | 'marked-ambiguous'
  /** HELD or AMBIGUOUS: waits for a person. */
  | 'waiting'
  /** Recovery of this effect failed; it stays where it was. */
  | 'error'

export interface RecoveredEffect {
  effectId: string
  target: string
  tier: Tier
  found: State
  action: RecoveryAction
  outcome?: SubmitOutcome
  error?: string
}

export interface RecoveryReport {
  recordsRead: number
  inFlight: number
  effects: RecoveredEffect[]
  /** Final status counts after recovery (in_flight = still unfinished). */
  counts: Partial<Record<OutcomeStatus, number>>
  durationMs: number
}

export async function recover(ctx: GateContext, isRunningHere: (id: string) => boolean): Promise<RecoveryReport> {
  const started = performance.now()
  const scan = await ctx.store.scanInFlight()
  const effects: RecoveredEffect[] = []
  const counts: RecoveryReport['counts'] = {}

  for (const snap of scan.effects) {
    if (isRunningHere(snap.effect.id)) continue
    const base = { effectId: snap.effect.id, target: snap.effect.target, tier: snap.tier, found: snap.state }
    if (snap.state === 'HELD' || snap.state === 'AMBIGUOUS') {
      effects.push({ ...base, action: 'waiting' })
      const k = snap.state === 'HELD' ? 'held' : 'ambiguous'
      counts[k] = (counts[k] ?? 0) + 1
      continue
    }
    try {
      const outcome = await advance(ctx, snap, { recovering: true })
      effects.push({ ...base, action: actionFor(snap.state, snap.tier, outcome), outcome })
      counts[outcome.status] = (counts[outcome.status] ?? 0) + 1
    } catch (err) {
      effects.push({ ...base, action: 'error', error: err instanceof Error ? err.message : String(err) })
      counts.in_flight = (counts.in_flight ?? 0) + 1
    }
  }
  return { recordsRead: scan.recordsRead, inFlight: scan.effects.length, effects, counts, durationMs: performance.now() - started }
}

function actionFor(found: State, tier: Tier, outcome: SubmitOutcome): RecoveryAction {
  if (found !== 'DISPATCHED') return 'resumed'
  if (tier === 3) return 'marked-ambiguous'
  if (tier === 1) return 're-applied'
  return outcome.status === 'committed' && outcome.via === 'query' ? 'found-by-query' : 'applied-after-query'
}
