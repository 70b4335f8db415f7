/**
 * Decimal amounts ("12.50") to Stripe's integer minor units, exactly.
 *
 * Stripe wants every amount in the currency's smallest unit
 * (https://docs.stripe.com/currencies, "Minor units in API amounts"):
 * - two-decimal currencies (the default): 12.50 USD → 1250;
 * - zero-decimal currencies (the list below): 500 JPY → 500;
 * - three-decimal currencies (BHD JOD KWD OMR TND): 5.120 KWD → 5120, and
 *   Stripe requires the last digit to be 0 ("Your integration must round
 *   amounts to the nearest ten");
 * - ISK stays two-decimal in the API but takes whole krónur only (amounts
 *   divisible by 100; https://support.stripe.com/questions/deprecation-of-fractional-isk-charges-and-refunds).
 *
 * An amount finer than that is refused, never rounded: a refund of a
 * different amount than the agent decided on is a different effect. Strings
 * only, because a JSON number has already lost the digits we would check.
 */
import { Decimal } from 'decimal.js'
import { InputError } from '../../errors.js'

/** https://docs.stripe.com/currencies#zero-decimal */
export const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf'])
/** https://docs.stripe.com/currencies#three-decimal */
export const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd'])

export interface CurrencyRule {
  /** Minor units per major unit, as a power of ten. */
  exponent: 0 | 2 | 3
  /** Decimal places Stripe actually accepts (fewer than `exponent` for KWD or ISK). */
  places: number
}

const DECIMAL = /^\d+(?:\.\d+)?$/
const CURRENCY = /^[a-z]{3}$/
/** Longer strings are not amounts. The bound also lets Exact's precision hold every product whole: no rounding anywhere. */
const MAX_LENGTH = 40
const Exact = Decimal.clone({ precision: 2 * MAX_LENGTH })

export function currencyRule(currency: string): CurrencyRule {
  const c = currency.toLowerCase()
  if (ZERO_DECIMAL.has(c)) return { exponent: 0, places: 0 }
  if (THREE_DECIMAL.has(c)) return { exponent: 3, places: 2 }
  if (c === 'isk') return { exponent: 2, places: 0 }
  return { exponent: 2, places: 2 }
}

/** A lower-case ISO 4217 code, or an InputError naming `arg`. */
export function parseCurrency(value: unknown, arg = 'currency'): string {
  if (typeof value !== 'string' || !CURRENCY.test(value.toLowerCase())) {
    throw new InputError(`args.${arg} must be a three-letter ISO currency code such as "usd" (got ${JSON.stringify(value)})`)
  }
  return value.toLowerCase()
}

/**
 * "12.50" in `currency` → 1250. Refuses (InputError naming `arg`) anything
 * that is not a plain positive decimal string, or is finer than the currency
 * allows, or does not fit an exact integer.
 */
export function toMinorUnits(amount: unknown, currency: string, arg = 'amount'): number {
  const code = parseCurrency(currency)
  const shown = JSON.stringify(amount)
  if (typeof amount !== 'string') {
    throw new InputError(`args.${arg} must be a decimal string such as "12.50" (got ${shown}): a JSON number may already have lost digits`)
  }
  if (/^\s*-/.test(amount)) throw new InputError(`args.${arg} must be more than zero (got ${shown}): a refund amount is never negative`)
  if (amount.length > MAX_LENGTH || !DECIMAL.test(amount)) {
    throw new InputError(`args.${arg} must be a decimal string of digits with an optional "." such as "12.50" (got ${shown})`)
  }
  const value = new Exact(amount)
  if (value.isZero()) throw new InputError(`args.${arg} must be more than zero (got ${shown})`)

  const rule = currencyRule(code)
  const upper = code.toUpperCase()
  // decimalPlaces() ignores trailing zeros: "10.000" USD is exactly 10.00.
  if (value.decimalPlaces() > rule.places) {
    const what =
      rule.places === 0
        ? `${upper} takes whole units only`
        : rule.places < rule.exponent
          ? `Stripe takes ${upper} to ${rule.places} decimal places (the last of its ${rule.exponent} digits must be 0)`
          : `${upper} has ${rule.places} decimal places`
    throw new InputError(`args.${arg} ${amount} ${upper} is finer than the currency allows: ${what}; it is refused, not rounded`, {
      hint: `Give an amount with at most ${rule.places} decimal place${rule.places === 1 ? '' : 's'}.`,
      context: { arg, amount, currency: code },
    })
  }
  const minor = value.times(new Exact(10).pow(rule.exponent))
  if (minor.greaterThan(Number.MAX_SAFE_INTEGER)) {
    throw new InputError(`args.${arg} ${amount} ${upper} is too large to be an amount`)
  }
  return minor.toNumber()
}

/** 1250 in USD → "12.50": for messages and receipts, the inverse of toMinorUnits. */
export function fromMinorUnits(minor: number, currency: string): string {
  const { exponent } = currencyRule(currency)
  return new Exact(minor).dividedBy(new Exact(10).pow(exponent)).toFixed(exponent)
}
