/**
 * What a refund decision rests on: the charge as the agent saw it.
 *
 *   { "charge": { "id", "status", "amount", "amount_refunded", "disputed", "currency" } }
 *
 * (fields of the Charge object, https://docs.stripe.com/api/charges/object).
 * Before dispatch the charge is read again: each field that changed is one
 * violation naming it, and the refund must still fit what is left to refund
 * (amount - amount_refunded). Without captured premises only the fit and the
 * dispute are checked: those hold for any refund.
 *
 * Stripe offers no precondition on a refund to push this down to, so the
 * check and the refund are two steps; Stripe's own refusal of a refund larger
 * than what is left (amount_too_large, charge_already_refunded) closes the gap.
 */
import { canonicalJson, type JsonObject, type JsonValue } from '../../canonical-json.js'
import type { Premises } from '../../effect.js'
import { fromMinorUnits } from './money.js'
import type { Refund } from './refund-args.js'

export const CHARGE_FIELDS = ['status', 'amount', 'amount_refunded', 'disputed', 'currency'] as const

export interface Charge {
  id: string
  status: string
  amount: number
  amount_refunded: number
  disputed: boolean
  currency: string
}

/** The fields we rest on, from a Charge object; null when the body is not one. */
export function chargeOf(body: JsonValue): Charge | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null
  const { id, status, amount, amount_refunded, disputed, currency } = body
  if (typeof id !== 'string' || typeof status !== 'string' || typeof currency !== 'string') return null
  if (typeof amount !== 'number' || typeof amount_refunded !== 'number' || typeof disputed !== 'boolean') return null
  return { id, status, amount, amount_refunded, disputed, currency: currency.toLowerCase() }
}

export function chargePremises(charge: Charge): Premises {
  return { charge: { ...charge } }
}

/** Violations of the premises (and of the refund's own precondition) against the charge now; null = it is gone. */
export function checkCharge(refund: Refund, premises: Premises, now: Charge | null): string[] {
  const id = refund.charge
  if (!now) return [`charge ${id} no longer exists`]
  const violations: string[] = []
  const was = premises.charge as JsonObject | undefined
  if (was !== undefined) {
    if (was === null || typeof was !== 'object' || Array.isArray(was) || was.id !== id) {
      return [`premises.charge must describe charge ${id} as capture wrote it`]
    }
    for (const field of CHARGE_FIELDS) {
      const before = was[field] ?? null
      if (canonicalJson(before) !== canonicalJson(now[field])) {
        violations.push(`charge ${id}: ${field} changed since the decision (was ${show(before)}, now ${show(now[field])})`)
      }
    }
  } else if (now.disputed) {
    violations.push(`charge ${id} is disputed`)
  }
  if (now.currency !== refund.currency) {
    violations.push(`charge ${id} is in ${now.currency.toUpperCase()}, the refund is in ${refund.currency.toUpperCase()}`)
    return violations
  }
  const left = now.amount - now.amount_refunded
  if (refund.amount > left) {
    const fmt = (n: number) => `${fromMinorUnits(n, now.currency)} ${now.currency.toUpperCase()}`
    violations.push(
      `a refund of ${fmt(refund.amount)} no longer fits charge ${id}: ${fmt(Math.max(0, left))} is left to refund (${fmt(now.amount)} charged, ${fmt(now.amount_refunded)} refunded)`,
    )
  }
  return violations
}

function show(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v)
}
