/**
 * Sending a DISPATCHED effect to its target, and deciding by tier what a
 * fault on the wire means (docs/design.md, "Faults on the wire"):
 * - not sent (connection refused before writing), or "retry later": resend;
 * - outcome unknown (timeout, reset, 5xx): tier 1 resends with the same key,
 *   tier 2 asks the target first, tier 3 becomes AMBIGUOUS and is never resent;
 * - definite refusal: FAILED; a pushed-down premise failing: REJECTED;
 * - the target cannot learn whether it happened ('unknowable', from apply or
 *   from a tier-2 query): AMBIGUOUS at any tier, for an operator;
 * - a wait longer than the gate waits in place (max_wait_ms), on a request
 *   that was not sent or not taken, or a target saying the effect must start
 *   over ('not-applied'): the effect is returned to AUTHORIZED (returned.ts),
 *   unless an earlier try may have landed, which keeps it DISPATCHED.
 * When tries run out the effect stays DISPATCHED for recovery to finish, unless
 * every try was answered "not sent" or "not now": then nothing can have landed,
 * and it is returned to AUTHORIZED instead.
 */
import { inSpan, SpanKind } from './tracing/spans.js'
import { crashPoint } from './crash-points.js'
import type { EffectSnapshot, JsonObject, Receipt } from './effect.js'
import { DispatchFault, type DispatchFaultKind } from './errors.js'
import { transition, targetOf, type GateContext } from './gate-context.js'
import { cannotAsk } from './notary/dispatched-through.js'
import { outcomeOf, type SubmitOutcome } from './outcome.js'
import { returnedData } from './returned.js'

export interface DispatchOptions {
  /** Recovery found the effect DISPATCHED: a previous process may have applied it. */
  recovering: boolean
}

export interface Dispatched {
  outcome: SubmitOutcome
  /** Set when the effect was returned to AUTHORIZED: where it now stands, for the next pass (advance.ts). */
  returned?: EffectSnapshot
}

export async function dispatch(ctx: GateContext, snap: EffectSnapshot, opts: DispatchOptions): Promise<SubmitOutcome> {
  return (await dispatchOnce(ctx, snap, opts)).outcome
}

export async function dispatchOnce(ctx: GateContext, snap: EffectSnapshot, opts: DispatchOptions): Promise<Dispatched> {
  const done = (outcome: SubmitOutcome | Promise<SubmitOutcome>): Promise<Dispatched> => Promise.resolve(outcome).then((o) => ({ outcome: o }))
  const target = targetOf(ctx, snap.effect.target)
  const tier = snap.tier
  let mayHaveLanded = opts.recovering
  let lastReason = ''
  // Relays: asked before apply and again by the target right before its write (targets/fence.ts).
  const held = ctx.stillHeld
  const fence = held ? () => held(snap.effect.id) : undefined
  // The DISPATCHED record's time: nothing for this effect left before it (a Stripe key's age is measured from it),
  // unless it is an operator's redispatch of an AMBIGUOUS effect (outbox/resolve.ts): that one was sent before.
  const resent = snap.detail?.redispatch === true
  const dispatchedAt = resent ? undefined : Date.parse(snap.updatedAt)
  // Whoever sent this effect before (a process that died, a relay that lost its lease) has stopped by now.
  const quietSince = Date.now()
  const asked = dispatchedAt === undefined ? { quietSince } : { dispatchedAt, quietSince }

  // Sent through a notary the config no longer names, or journaled as askable by a target that no longer is (dispatched-through.ts).
  const lost = cannotAsk(snap, target)
  const ambiguousAsLost = () => done(settle(ctx, snap, 'AMBIGUOUS', { reason: lost!.reason, ...lost!.data }))

  for (let attempt = 1; attempt <= ctx.retry.maxAttempts; attempt++) {
    if (mayHaveLanded && lost) return ambiguousAsLost()
    if (mayHaveLanded && tier === 2) {
      // Applying again without an answer could apply twice: a failed query means wait and ask again.
      let found: Receipt | null
      try {
        found = await inSpan('interlock.query', { 'interlock.attempt': attempt }, () => target.query!(snap.effect, asked), { kind: SpanKind.CLIENT })
      } catch (err) {
        if (unknowable(err)) return done(settle(ctx, snap, 'AMBIGUOUS', { reason: err.message }))
        lastReason = `could not ask whether it happened: ${err instanceof Error ? err.message : String(err)}`
        // A query that says when to ask again (a search index catching up: settle_ms) is waited for, up to max_wait_ms.
        const asked = err instanceof DispatchFault ? err.retryAfterMs : undefined
        if (attempt < ctx.retry.maxAttempts) await retryAfter(ctx, snap, attempt, lastReason, asked === undefined ? backoff(ctx, attempt) : Math.min(asked, ctx.retry.maxWaitMs))
        continue
      }
      if (found) return done(commit(ctx, snap, found, 'query'))
    }
    if (mayHaveLanded && tier === 3) {
      return done(settle(ctx, snap, 'AMBIGUOUS', {
        reason: lastReason || 'the process crashed while the effect was in flight; the target cannot say whether it landed',
      }))
    }

    if (fence && !fence()) return done(leaseLost(snap))
    let receipt: Receipt
    try {
      const applyCtx = { attempt, recovering: opts.recovering, fence, dispatchedAt, quietSince, ...(resent ? { resent } : {}) }
      receipt = await inSpan('interlock.dispatch', { 'interlock.attempt': attempt, 'interlock.recovering': opts.recovering }, () => target.apply(snap.effect, applyCtx), { kind: SpanKind.CLIENT })
    } catch (err) {
      const fault = classify(err)
      lastReason = fault.message
      switch (fault.kind) {
        case 'fenced':
          // The target sent nothing: the lease ran out between the check above and the write.
          ctx.observe?.({ kind: 'fenced', effectId: snap.effect.id, reason: fault.message })
          return done(leaseLost(snap))
        case 'refused':
          return done(settle(ctx, snap, 'FAILED', fault.answer ? { reason: fault.message, answer: fault.answer } : { reason: fault.message }))
        case 'unknowable':
          return done(settle(ctx, snap, 'AMBIGUOUS', { reason: fault.message }))
        case 'premise':
          return done(settle(ctx, snap, 'REJECTED', { violations: [fault.message] }))
        case 'not-applied':
          // The target vouches that the effect did not take place and must start over.
          return giveBack(ctx, snap, fault.message, fault.retryAfterMs)
        case 'not-sent':
        case 'retry-later':
          if (fault.retryAfterMs !== undefined && fault.retryAfterMs > ctx.retry.maxWaitMs) return waitLonger(ctx, snap, fault, mayHaveLanded)
          break
        case 'unknown':
          mayHaveLanded = true
          if (tier === 3) {
            return done(settle(ctx, snap, 'AMBIGUOUS', { reason: `outcome unknown: ${fault.message}` }))
          }
          break
      }
      if (attempt < ctx.retry.maxAttempts) await retryAfter(ctx, snap, attempt, fault.message, backoff(ctx, attempt, fault.retryAfterMs))
      continue
    }
    await crashPoint('after-apply', snap.effect.id)
    return done(commit(ctx, snap, receipt, 'apply'))
  }

  // A tier-2 effect whose last try failed in an unknown way gets one more look before we give up.
  if (mayHaveLanded && lost) return ambiguousAsLost()
  if (mayHaveLanded && tier === 2) {
    const found = await target.query!(snap.effect, asked).catch((err: unknown) => (unknowable(err) ? err : null))
    if (found instanceof DispatchFault) return done(settle(ctx, snap, 'AMBIGUOUS', { reason: found.message }))
    if (found) return done(commit(ctx, snap, found, 'query'))
  }
  const gaveUp = `gave up after ${ctx.retry.maxAttempts} tries (${lastReason})`
  // Every try was answered "not sent" or "not now": nothing can have landed, so the effect
  // goes back to AUTHORIZED (its premises checked again when it goes). Left DISPATCHED,
  // recovery would have to assume it may have landed: a tier-3 effect would turn AMBIGUOUS
  // although the service never took it.
  // Not carried on in this pass (no `returned`): its tries are spent; the next pass sends it.
  if (!mayHaveLanded) return { outcome: (await giveBack(ctx, snap, `${gaveUp}; nothing was sent`, backoff(ctx, ctx.retry.maxAttempts))).outcome }
  return done({
    status: 'in_flight',
    effectId: snap.effect.id,
    state: 'DISPATCHED',
    reason: `${gaveUp}; recovery will finish it`,
  })
}

type Fault = ReturnType<typeof classify>

/**
 * The service asks for a longer wait than the gate waits in place. Nothing was
 * applied by this request; if no earlier try may have landed either, the effect
 * goes back to AUTHORIZED until then. Otherwise it stays DISPATCHED (recovery's
 * rules by tier finish it), and the outcome still says when to ask again.
 */
async function waitLonger(ctx: GateContext, snap: EffectSnapshot, fault: Fault, mayHaveLanded: boolean): Promise<Dispatched> {
  const waitMs = fault.retryAfterMs!
  const why = `${fault.message}; the service asks to wait ${seconds(waitMs)}, longer than the gate waits in place (max_wait_ms ${ctx.retry.maxWaitMs})`
  if (!mayHaveLanded) return giveBack(ctx, snap, why, waitMs)
  const notBefore = new Date(nowOf(ctx) + waitMs).toISOString()
  return {
    outcome: {
      status: 'in_flight',
      effectId: snap.effect.id,
      state: 'DISPATCHED',
      reason: `${why}; an earlier try may have landed, so it stays DISPATCHED for recovery, not before ${notBefore}`,
      notBefore,
    },
  }
}

/** DISPATCHED → AUTHORIZED (returned.ts), durable before anyone may pick the effect up again. */
async function giveBack(ctx: GateContext, snap: EffectSnapshot, why: string, waitMs?: number): Promise<Dispatched> {
  const notBefore = waitMs !== undefined && waitMs > 0 ? nowOf(ctx) + waitMs : undefined
  const t = await transition(ctx, snap, 'AUTHORIZED', returnedData(why, notBefore))
  if (!t.moved) return { outcome: outcomeOf(t.current) }
  return { outcome: outcomeOf(t.snap), returned: t.snap }
}

function nowOf(ctx: GateContext): number {
  return (ctx.now ?? Date.now)()
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`
}

/** A relay whose lease ran out (paused, cut off) leaves the effect to whoever holds it now, sending nothing. */
function leaseLost(snap: EffectSnapshot): SubmitOutcome {
  return { status: 'in_flight', effectId: snap.effect.id, state: 'DISPATCHED', reason: 'lease lost before apply; another relay finishes it' }
}

async function commit(ctx: GateContext, snap: EffectSnapshot, receipt: Receipt, via: 'apply' | 'query'): Promise<SubmitOutcome> {
  return settle(ctx, snap, 'COMMITTED', { receipt, via })
}

async function settle(
  ctx: GateContext,
  snap: EffectSnapshot,
  to: 'COMMITTED' | 'FAILED' | 'REJECTED' | 'AMBIGUOUS',
  data: Parameters<typeof transition>[3],
): Promise<SubmitOutcome> {
  return inSpan(to === 'COMMITTED' ? 'interlock.commit' : 'interlock.settle', { 'interlock.state': to }, async () => {
    const t = await transition(ctx, snap, to, data)
    return outcomeOf(t.moved ? t.snap : t.current)
  })
}

function unknowable(err: unknown): err is DispatchFault {
  return err instanceof DispatchFault && err.kind === 'unknowable'
}

function classify(err: unknown): { kind: DispatchFaultKind; message: string; retryAfterMs?: number; answer?: JsonObject } {
  if (err instanceof DispatchFault) return { kind: err.kind, message: err.message, retryAfterMs: err.retryAfterMs, answer: err.answer as JsonObject | undefined }
  // Anything a target did not classify may have happened after the request left: assume the worst.
  return { kind: 'unknown', message: err instanceof Error ? err.message : String(err) }
}

/** Says a failed try will be tried again, then waits for it. */
async function retryAfter(ctx: GateContext, snap: EffectSnapshot, attempt: number, reason: string, waitMs: number): Promise<void> {
  ctx.observe?.({ kind: 'retry', effectId: snap.effect.id, attempt, maxAttempts: ctx.retry.maxAttempts, reason, waitMs })
  await ctx.sleep(waitMs)
}

/** A service's wait (never above maxWaitMs here: longer ones return the effect), else our own doubling back-off. */
function backoff(ctx: GateContext, attempt: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return retryAfterMs
  return Math.min(ctx.retry.backoffMs * 2 ** (attempt - 1), 30_000, ctx.retry.maxWaitMs)
}
