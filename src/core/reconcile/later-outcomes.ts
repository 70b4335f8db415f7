/**
 * `reconcile-effects`' second sweep: COMMITTED effects whose service had not
 * finished them when it answered (a Stripe refund answered `pending`), asked
 * again through their target's `laterOutcome` (targets/target.ts), read-only.
 *
 * The journal is not changed: COMMITTED is final, and what the service did
 * since is reported, not recorded. A refund that failed after it was committed
 * means the money did not reach the customer, which only a person can put
 * right; it is listed (effect id, target, the service's status and reason) on
 * every run while its effect is within the window, and the run's exit code
 * says so (reconcile.ts). Effects still pending are counted and asked again by
 * the next run. Only effects created within the window are asked (store.list
 * with `since`), newest first, at most `limit` of them.
 */
import type { Receipt } from '../effect.js'
import type { Store } from '../stores/store.js'
import type { EffectTarget } from '../targets/target.js'

export interface LaterFailure {
  effectId: string
  target: string
  /** The service's status now (a refund's `failed`, `canceled`). */
  status: string
  detail: string
}

export interface LaterOutcomes {
  /** How far back committed effects were asked about (ms). */
  withinMs: number
  /** Committed effects asked about (their receipts were not final). */
  asked: number
  /** Failed at the service since they were committed: an operator must act. */
  failed: LaterFailure[]
  /** Still not final: asked again next run. */
  pending: number
  /** Could not be asked now (the service down): asked again next run. */
  errors: { effectId: string; target: string; error: string }[]
}

const PAGE = 500

export async function laterOutcomes(
  store: Store,
  targets: Iterable<EffectTarget>,
  opts: { withinMs: number; now: number; limit?: number },
): Promise<LaterOutcomes> {
  const out: LaterOutcomes = { withinMs: opts.withinMs, asked: 0, failed: [], pending: 0, errors: [] }
  const since = new Date(opts.now - opts.withinMs).toISOString()
  const limit = opts.limit ?? 10_000
  for (const target of targets) {
    if (!target.laterOutcome) continue
    let seen = 0
    for (let offset = 0; seen < limit; offset += PAGE) {
      const page = await store.list({ states: ['COMMITTED'], target: target.name, since, limit: PAGE, offset })
      for (const snap of page) {
        if (seen++ >= limit) break
        const receipt = snap.detail.receipt as Receipt | undefined
        if (!receipt || typeof receipt !== 'object') continue
        try {
          const later = await target.laterOutcome(snap.effect, receipt)
          if (!later) continue
          out.asked++
          if (later.failed) out.failed.push({ effectId: snap.effect.id, target: target.name, status: later.status, detail: later.detail })
          else if (later.pending) out.pending++
        } catch (e) {
          out.asked++
          out.errors.push({ effectId: snap.effect.id, target: target.name, error: e instanceof Error ? e.message : String(e) })
        }
      }
      if (page.length < PAGE) break
    }
  }
  return out
}
