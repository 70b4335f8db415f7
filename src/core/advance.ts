/**
 * The normal path, step by step, from wherever an effect stands:
 * PROPOSED → (HELD | AUTHORIZED) → premises re-checked → DISPATCHED → apply → COMMITTED.
 * Submit starts it at PROPOSED; recovery resumes it from the state it finds.
 * Each step is made durable before the next begins; nothing reaches a target
 * before DISPATCHED is durable.
 */
import { dispatch } from './dispatch.js'
import type { EffectSnapshot } from './effect.js'
import { transition, targetOf, type GateContext } from './gate-context.js'
import { outcomeOf, type SubmitOutcome } from './outcome.js'
import { unsafe } from './unsafe.js'

export interface AdvanceOptions {
  /** True when resuming after a crash: a DISPATCHED effect may already have landed. */
  recovering: boolean
}

export async function advance(ctx: GateContext, start: EffectSnapshot, opts: AdvanceOptions): Promise<SubmitOutcome> {
  let snap = start
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
        if (unsafe('sendBeforeDurable')) return sendBeforeDurable(ctx, snap)
        // Premises are checked here, as late as possible before DISPATCHED.
        const violations = unsafe('skipPremiseCheck') ? [] : await targetOf(ctx, snap.effect.target).validatePremises(snap.effect)
        const t =
          violations.length > 0
            ? await transition(ctx, snap, 'REJECTED', { violations })
            : await transition(ctx, snap, 'DISPATCHED', {})
        if (!t.moved) return outcomeOf(t.current)
        if (t.snap.state !== 'DISPATCHED') return outcomeOf(t.snap)
        return dispatch(ctx, t.snap, { recovering: false })
      }
      case 'DISPATCHED':
        return dispatch(ctx, snap, { recovering: opts.recovering })
      default:
        // HELD waits for a release; terminal and AMBIGUOUS states wait for nobody.
        return outcomeOf(snap)
    }
  }
}

/** UNSAFE test switch (unsafe.ts): sends while the journal still says AUTHORIZED. Never reached otherwise. */
async function sendBeforeDurable(ctx: GateContext, snap: EffectSnapshot): Promise<SubmitOutcome> {
  const receipt = await targetOf(ctx, snap.effect.target).apply(snap.effect, { attempt: 1, recovering: false })
  const d = await transition(ctx, snap, 'DISPATCHED', {})
  if (!d.moved) return outcomeOf(d.current)
  const c = await transition(ctx, d.snap, 'COMMITTED', { receipt, via: 'apply' })
  return outcomeOf(c.moved ? c.snap : c.current)
}
