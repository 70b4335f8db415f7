/**
 * The arguments of a Stripe refund, checked once at the edge:
 *
 *   { charge: "ch_…", amount: "12.50", currency: "usd", reason?: "duplicate" | "fraudulent" | "requested_by_customer" }
 *
 * `amount` is a decimal string in `currency`, turned into minor units exactly
 * (money.ts). `currency` must be the charge's own (checked against the charge
 * when premises are captured and validated): Stripe refunds in the charge's
 * currency, so the currency here is what the agent believed it was.
 */
import type { JsonObject } from '../../canonical-json.js'
import { InputError } from '../../errors.js'
import { parseCurrency, toMinorUnits } from './money.js'

export const REFUND_ACTION = 'refund'
/** https://docs.stripe.com/api/refunds/create#create_refund-reason */
export const REASONS = ['duplicate', 'fraudulent', 'requested_by_customer'] as const
const KNOWN = new Set(['charge', 'amount', 'currency', 'reason'])
// Stripe object ids: a prefix, "_", then letters and digits. Checked so an id can be a path segment as is.
const CHARGE_ID = /^(ch|py)_[A-Za-z0-9]+$/

export interface Refund {
  charge: string
  /** Minor units of `currency`. */
  amount: number
  /** As the agent wrote it, for messages. */
  amountText: string
  /** Lower case. */
  currency: string
  reason?: (typeof REASONS)[number]
}

export function parseRefund(action: string, args: JsonObject): Refund {
  if (action !== REFUND_ACTION) {
    throw new InputError(`a Stripe refund target has one action, "${REFUND_ACTION}" (got ${JSON.stringify(action)})`)
  }
  const unknown = Object.keys(args).filter((k) => !KNOWN.has(k))
  if (unknown.length > 0) {
    throw new InputError(`unknown refund argument${unknown.length === 1 ? '' : 's'}: ${unknown.map((k) => `args.${k}`).join(', ')}`, {
      hint: 'A refund takes charge, amount, currency and optionally reason.',
    })
  }
  if (typeof args.charge !== 'string' || !CHARGE_ID.test(args.charge)) {
    throw new InputError(`args.charge must be a Stripe charge id such as "ch_3MmlLrLkdIwHu7ix0snN0B15" (got ${JSON.stringify(args.charge ?? null)})`)
  }
  if (args.currency === undefined) throw new InputError('args.currency is required: the currency of the amount, e.g. "usd"')
  if (args.amount === undefined) throw new InputError('args.amount is required: a decimal string such as "12.50"')
  const currency = parseCurrency(args.currency)
  const refund: Refund = { charge: args.charge, amount: toMinorUnits(args.amount, currency), amountText: args.amount as string, currency }
  if (args.reason !== undefined) {
    if (typeof args.reason !== 'string' || !(REASONS as readonly string[]).includes(args.reason)) {
      throw new InputError(`args.reason must be one of ${REASONS.join(', ')} (got ${JSON.stringify(args.reason)})`)
    }
    refund.reason = args.reason as Refund['reason']
  }
  return refund
}

/**
 * The form Stripe receives (application/x-www-form-urlencoded, as its v1 API
 * wants). The same arguments always give the same bytes: Stripe compares a
 * retried key's parameters with the first request's and refuses a difference.
 */
export function refundForm(refund: Refund, effectId: string): string {
  const form = new URLSearchParams()
  form.set('charge', refund.charge)
  form.set('amount', String(refund.amount))
  if (refund.reason) form.set('reason', refund.reason)
  // Stripe keeps metadata on the refund: the effect id can be found from the Stripe side too.
  form.set('metadata[interlock_effect_id]', effectId)
  return form.toString()
}
