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
 * This table lives here only: `gate.recover()` (a process resuming its own
 * work) and `interlock reconcile-effects` (a DBA's sweep of a shared store)
 * both run it, the latter with options: a grace period, a limit, bounded
 * concurrency per target, a dry run, and a filter (e.g. a live relay lease).
 *
 * Effects this process is itself still working on are left alone. Recovery
 * assumes no other live process is working on the effects it passes to
 * `advance` (inline mode); the filter is where callers exclude the ones that
 * someone else holds.
 */
import { advance } from './advance.js'
import type { EffectSnapshot, Tier } from './effect.js'
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
  /** Dry run: `plan` says what would be done; nothing was. */
  | 'planned'
  /** Recovery of this effect failed; it stays where it was. */
  | 'error'

/** What the table says to do with an effect, before doing it. */
export type RecoveryPlan = 'resume' | 're-apply' | 'query' | 'mark-ambiguous' | 'wait'

export interface RecoveredEffect {
  effectId: string
  target: string
  tier: Tier
  found: State
  plan: RecoveryPlan
  action: RecoveryAction
  outcome?: SubmitOutcome
  error?: string
}

export interface RecoverOptions {
  /** Only effects whose last journal record is at least this old (ms). Default 0: all. */
  olderThanMs?: number
  /** Act on at most this many effects (oldest first); the rest are counted as deferred. Waiting ones do not count. */
  limit?: number
  /** Effects worked on at once per target. Default 1 (one after another, oldest first). */
  concurrency?: number
  /** Say what would be done; write nothing, send nothing. */
  dryRun?: boolean
  /** False leaves the effect alone (counted as skipped), e.g. one a live relay holds. */
  filter?: (snap: EffectSnapshot) => boolean | Promise<boolean>
  /** Called once with the effects chosen, before any is acted on. */
  onChosen?: (chosen: readonly EffectSnapshot[]) => void | Promise<void>
  /** Wall clock for olderThanMs (default Date.now). */
  now?: () => number
  /** Called after each effect is handled. */
  onProgress?: (done: number, total: number) => void
}

export interface RecoveryReport {
  recordsRead: number
  inFlight: number
  effects: RecoveredEffect[]
  /** Final status counts after recovery (in_flight = still unfinished). */
  counts: Partial<Record<OutcomeStatus, number>>
  /** Left alone: younger than olderThanMs, refused by the filter, or beyond the limit. */
  skipped: { recent: number; filtered: number; deferred: number }
  dryRun: boolean
  durationMs: number
}

export async function recover(
  ctx: GateContext,
  isRunningHere: (id: string) => boolean,
  opts: RecoverOptions = {},
): Promise<RecoveryReport> {
  const started = performance.now()
  const scan = await ctx.store.scanInFlight()
  const skipped = { recent: 0, filtered: 0, deferred: 0 }
  const cutoff = (opts.now ?? Date.now)() - (opts.olderThanMs ?? 0)
  const chosen: EffectSnapshot[] = []
  // The limit counts effects acted on; those waiting for a person are only reported.
  let acting = 0
  for (const snap of scan.effects) {
    if (isRunningHere(snap.effect.id)) continue
    if (opts.olderThanMs && Date.parse(snap.updatedAt) > cutoff) {
      skipped.recent++
      continue
    }
    if (opts.filter && !(await opts.filter(snap))) {
      skipped.filtered++
      continue
    }
    const waits = planFor(snap.state, snap.tier) === 'wait'
    if (!waits && opts.limit !== undefined && acting >= opts.limit) {
      skipped.deferred++
      continue
    }
    if (!waits) acting++
    chosen.push(snap)
  }
  await opts.onChosen?.(chosen)

  const results = new Map<string, RecoveredEffect>()
  let done = 0
  const handle = async (snap: EffectSnapshot) => {
    results.set(snap.effect.id, await recoverOne(ctx, snap, opts.dryRun ?? false))
    opts.onProgress?.(++done, chosen.length)
  }
  // One queue per target, each drained by up to `concurrency` workers: a slow or
  // failing target never holds up another, and no target sees more than it allows.
  const byTarget = new Map<string, EffectSnapshot[]>()
  for (const snap of chosen) byTarget.set(snap.effect.target, [...(byTarget.get(snap.effect.target) ?? []), snap])
  const width = Math.max(1, opts.concurrency ?? 1)
  await Promise.all(
    [...byTarget.values()].flatMap((queue) =>
      Array.from({ length: Math.min(width, queue.length) }, async () => {
        for (let snap = queue.shift(); snap; snap = queue.shift()) await handle(snap)
      }),
    ),
  )

  const effects = chosen.map((s) => results.get(s.effect.id)!)
  const counts: RecoveryReport['counts'] = {}
  for (const e of effects) {
    const k: OutcomeStatus = e.outcome?.status ?? (e.found === 'HELD' ? 'held' : e.found === 'AMBIGUOUS' ? 'ambiguous' : 'in_flight')
    counts[k] = (counts[k] ?? 0) + 1
  }
  return {
    recordsRead: scan.recordsRead,
    inFlight: scan.effects.length,
    effects,
    counts,
    skipped,
    dryRun: opts.dryRun ?? false,
    durationMs: performance.now() - started,
  }
}

async function recoverOne(ctx: GateContext, snap: EffectSnapshot, dryRun: boolean): Promise<RecoveredEffect> {
  const plan = planFor(snap.state, snap.tier)
  const base = { effectId: snap.effect.id, target: snap.effect.target, tier: snap.tier, found: snap.state, plan }
  if (plan === 'wait') return { ...base, action: 'waiting' }
  if (dryRun) return { ...base, action: 'planned' }
  try {
    const outcome = await advance(ctx, snap, { recovering: true })
    return { ...base, action: actionFor(snap.state, snap.tier, outcome), outcome }
  } catch (err) {
    return { ...base, action: 'error', error: err instanceof Error ? err.message : String(err) }
  }
}

export function planFor(found: State, tier: Tier): RecoveryPlan {
  if (found === 'HELD' || found === 'AMBIGUOUS') return 'wait'
  if (found !== 'DISPATCHED') return 'resume'
  return tier === 1 ? 're-apply' : tier === 2 ? 'query' : 'mark-ambiguous'
}

function actionFor(found: State, tier: Tier, outcome: SubmitOutcome): RecoveryAction {
  if (found !== 'DISPATCHED') return 'resumed'
  if (tier === 3) return 'marked-ambiguous'
  if (tier === 1) return 're-applied'
  return outcome.status === 'committed' && outcome.via === 'query' ? 'found-by-query' : 'applied-after-query'
}
