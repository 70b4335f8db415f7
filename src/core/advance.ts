/**
 * The normal path, step by step, from wherever an effect stands:
 * PROPOSED → (HELD | AUTHORIZED) → premises re-checked → DISPATCHED → apply → COMMITTED.
 * Submit starts it with a new effect (propose.ts); recovery and relays resume
 * it from the state they find. Each durable commit is made before the next
 * step begins; nothing reaches a target before DISPATCHED is durable.
 *
 * Nothing leaves the process between AUTHORIZED and DISPATCHED, so an effect
 * no rule holds takes both in one commit (each its own record), made after
 * its premises are checked: AUTHORIZED then DISPATCHED, or AUTHORIZED then
 * REJECTED when a premise no longer holds (docs/design.md, "Durability").
 *
 * A returned effect (DISPATCHED → AUTHORIZED, returned.ts) is not sent before
 * its notBefore, whoever picks it up; when it goes, it goes from AUTHORIZED,
 * premises first. One returned in this very pass with a wait the gate may
 * spend in place (none, for a target that must start over) is carried on at
 * once, once: a target that returns it again waits for the next pass.
 */
import { inSpan } from './tracing/spans.js'
import { crashPoint } from './crash-points.js'
import { dispatchOnce } from './dispatch.js'
import type { EffectSnapshot } from './effect.js'
import { transition, transitions, targetOf, type GateContext, type Moved, type Step } from './gate-context.js'
import { journalOutcome, outcomeOf, type SubmitOutcome } from './outcome.js'
import { dispatchedData } from './notary/dispatched-through.js'
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
    let t: Moved
    switch (snap.state) {
      case 'PROPOSED': {
        const hold = ctx.policy.evaluate(snap.effect, snap.tier)
        if (hold) {
          const held = await transition(ctx, snap, 'HELD', hold.reason === undefined ? { rule: hold.rule } : { rule: hold.rule, reason: hold.reason })
          return outcomeOf(held.moved ? held.snap : held.current)
        }
        t = await checkedCommit(ctx, snap, [{ to: 'AUTHORIZED', data: {} }], (steps) => transitions(ctx, snap, steps))
        break
      }
      case 'AUTHORIZED': {
        // A return's wait, unless this pass just spent it (mayGoAgain).
        const notBefore = notBeforeOf(snap)
        if (returns === 0 && notBefore !== undefined && notBefore > (ctx.now ?? Date.now)()) return outcomeOf(snap)
        t = await checkedCommit(ctx, snap, [], (steps) => transitions(ctx, snap, steps))
        break
      }
      case 'DISPATCHED':
        t = { moved: true, snap }
        break
      default:
        // HELD waits for a release; terminal and AMBIGUOUS states wait for nobody. Nothing was sent here.
        return journalOutcome(snap)
    }
    // Another writer moved it on first: where it stands is theirs, and this pass sent nothing.
    if (!t.moved) return journalOutcome(t.current)
    if (t.snap.state !== 'DISPATCHED') return outcomeOf(t.snap)
    // Found DISPATCHED: it may have landed, if this is recovery. Made DISPATCHED here: it has not.
    const sent = await dispatchOnce(ctx, t.snap, { recovering: snap.state === 'DISPATCHED' && opts.recovering })
    if (!sent.returned || !(await mayGoAgain(ctx, sent.returned, returns++))) return sent.outcome
    snap = sent.returned
  }
}

/**
 * Checks the effect's premises, as late as possible before DISPATCHED, then
 * makes `lead` and DISPATCHED (or REJECTED, naming the premises that no
 * longer hold) durable in one commit.
 */
export async function checkedCommit<T>(ctx: GateContext, snap: Pick<EffectSnapshot, 'effect'>, lead: Step[], commit: (steps: Step[]) => Promise<T>): Promise<T> {
  const target = targetOf(ctx, snap.effect.target)
  const violations = await inSpan('interlock.premises', {}, async (span) => {
    const v = await target.validatePremises(snap.effect)
    span?.setAttribute('interlock.premises_hold', v.length === 0)
    return v
  })
  await crashPoint('after-premises', snap.effect.id)
  // DISPATCHED names the notary it goes through, so recovery knows it even if the config stops saying so.
  return commit([...lead, violations.length > 0 ? { to: 'REJECTED', data: { violations } } : { to: 'DISPATCHED', data: dispatchedData(target) }])
}

/** A return this pass may carry on from: within the per-pass bound, and no longer a wait than the gate spends in place (spent here). */
async function mayGoAgain(ctx: GateContext, returned: EffectSnapshot, returnsSoFar: number): Promise<boolean> {
  if (returnsSoFar >= RETURNS_PER_PASS) return false
  const waitMs = (notBeforeOf(returned) ?? 0) - (ctx.now ?? Date.now)()
  if (waitMs > ctx.retry.maxWaitMs) return false
  if (waitMs > 0) await ctx.sleep(waitMs)
  return true
}
