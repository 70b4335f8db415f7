/**
 * The normal path, step by step, from wherever an effect stands:
 * PROPOSED → (HELD | AUTHORIZED) → premises re-checked → DISPATCHED → apply → COMMITTED.
 * Submit starts it at PROPOSED; recovery resumes it from the state it finds.
 * Each step is made durable before the next begins; nothing reaches a target
 * before DISPATCHED is durable.
 *
 * A returned effect (DISPATCHED → AUTHORIZED, returned.ts) is not sent before
 * its notBefore, whoever picks it up; when it goes, it goes from AUTHORIZED,
 * premises first. One returned in this very pass with a wait the gate may
 * spend in place (none, for a target that must start over) is carried on at
 * once, once: a target that returns it again waits for the next pass.
 */
import { dispatchOnce } from './dispatch.js'
import type { EffectSnapshot } from './effect.js'
import { transition, targetOf, type GateContext } from './gate-context.js'
import { outcomeOf, type SubmitOutcome } from './outcome.js'
import { notBeforeOf } from './returned.js'

/** Returns carried on within one pass, at most. */
const RETURNS_PER_PASS = 1

export interface AdvanceOptions {
  /** True when resuming after a crash: a DISPATCHED effect may already have landed. */
  recovering: boolean
}

export async function advance(ctx: GateContext, start: EffectSnapshot, opts: AdvanceOptions): Promise<SubmitOutcome> {
  let snap = start
  let returns = 0
  for (;;) {
    switch (snap.state) {
      case 'PROPOSED': {
        const hold = ctx.policy.evaluate(snap.effect, snap.tier)
        const t = hold
          ? await transition(ctx, snap, 'HELD', hold.reason === undefined ? { rule: hold.rule } : { rule: hold.rule, reason: hold.reason })
          : await transition(ctx, snap, 'AUTHORIZED', {})
        if (!t.moved) return outcomeOf(t.current)
        snap = t.snap
        continue
      }
      case 'AUTHORIZED': {
        // A return's wait, unless this pass just spent it (mayGoAgain).
        const notBefore = notBeforeOf(snap)
        if (returns === 0 && notBefore !== undefined && notBefore > (ctx.now ?? Date.now)()) return outcomeOf(snap)
        // Premises are checked here, as late as possible before DISPATCHED.
        const violations = await targetOf(ctx, snap.effect.target).validatePremises(snap.effect)
        const t =
          violations.length > 0
            ? await transition(ctx, snap, 'REJECTED', { violations })
            : await transition(ctx, snap, 'DISPATCHED', {})
        if (!t.moved) return outcomeOf(t.current)
        if (t.snap.state !== 'DISPATCHED') return outcomeOf(t.snap)
        const sent = await dispatchOnce(ctx, t.snap, { recovering: false })
        if (!sent.returned || !(await mayGoAgain(ctx, sent.returned, returns++))) return sent.outcome
        snap = sent.returned
        continue
      }
      case 'DISPATCHED': {
        const sent = await dispatchOnce(ctx, snap, { recovering: opts.recovering })
        if (!sent.returned || !(await mayGoAgain(ctx, sent.returned, returns++))) return sent.outcome
        snap = sent.returned
        continue
      }
      default:
        // HELD waits for a release; terminal and AMBIGUOUS states wait for nobody.
        return outcomeOf(snap)
    }
  }
}

/** A return this pass may carry on from: within the per-pass bound, and no longer a wait than the gate spends in place (spent here). */
async function mayGoAgain(ctx: GateContext, returned: EffectSnapshot, returnsSoFar: number): Promise<boolean> {
  if (returnsSoFar >= RETURNS_PER_PASS) return false
  const waitMs = (notBeforeOf(returned) ?? 0) - (ctx.now ?? Date.now)()
  if (waitMs > ctx.retry.maxWaitMs) return false
  if (waitMs > 0) await ctx.sleep(waitMs)
  return true
}

