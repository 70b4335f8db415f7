/**
 * How old an idempotency key may be. Stripe keeps a key's saved answer for at
 * least 24 hours, then may prune it, and "We generate a new request if a key
 * is reused after the original is pruned" (https://docs.stripe.com/idempotency).
 * A re-apply past that age is therefore not protected by the key: it is a new
 * refund, decided on premises a day old. The key's age is at most the time
 * since the effect entered DISPATCHED (ApplyContext.dispatchedAt: nothing for
 * it was sent before); an hour of margin covers the two clocks disagreeing.
 * An operator's redispatch of an AMBIGUOUS refund (ApplyContext.resent) reuses
 * a key of unknown age.
 */
import type { ApplyContext } from '../target.js'

export const KEY_KEPT_MS = 24 * 60 * 60 * 1000
/** Past this age a key is treated as possibly pruned. */
export const KEY_TRUSTED_MS = KEY_KEPT_MS - 60 * 60 * 1000

/** Whether this apply may be sending a key Stripe has seen before and may have pruned since. */
export function keyMayBePruned(ctx: ApplyContext, nowMs: number): boolean {
  // A first send under fresh premises uses a key nobody has sent yet; an operator's redispatch does not.
  if (!ctx.recovering && !ctx.resent && ctx.attempt <= 1) return false
  // Age unknown: assume the worst.
  if (ctx.dispatchedAt === undefined || Number.isNaN(ctx.dispatchedAt)) return true
  return nowMs - ctx.dispatchedAt >= KEY_TRUSTED_MS
}

export function ageText(ctx: ApplyContext, nowMs: number): string {
  if (ctx.dispatchedAt === undefined || Number.isNaN(ctx.dispatchedAt)) return 'of unknown age'
  const hours = (nowMs - ctx.dispatchedAt) / 3_600_000
  return `${hours.toFixed(1)} hours old`
}
