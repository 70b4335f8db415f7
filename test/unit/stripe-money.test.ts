import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { InputError } from '../../src/core/errors.js'
import { currencyRule, fromMinorUnits, THREE_DECIMAL, toMinorUnits, ZERO_DECIMAL } from '../../src/core/targets/stripe/money.js'

const TWO = ['usd', 'eur', 'gbp', 'chf', 'huf', 'twd']
const ZERO = [...ZERO_DECIMAL]
const THREE = [...THREE_DECIMAL]
const currency = fc.constantFrom(...TWO, ...ZERO, ...THREE, 'isk')

/** The minor-unit amounts Stripe accepts in `c`: multiples of 10 in three-decimal currencies, whole krónur in ISK. */
function accepted(c: string): fc.Arbitrary<number> {
  const { exponent, places } = currencyRule(c)
  const step = 10 ** (exponent - places)
  return fc.integer({ min: 1, max: Math.floor(Number.MAX_SAFE_INTEGER / step) }).map((n) => n * step)
}

function refusal(f: () => unknown): InputError {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(InputError)
    return e as InputError
  }
  throw new Error('expected an InputError')
}

describe('Stripe minor units', () => {
  it("knows Stripe's zero-decimal and three-decimal lists", () => {
    expect(ZERO.sort()).toEqual(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf'])
    expect(THREE.sort()).toEqual(['bhd', 'jod', 'kwd', 'omr', 'tnd'])
  })

  it('converts the documented examples, whatever the case of the code', () => {
    expect(toMinorUnits('10', 'USD')).toBe(1000)
    expect(toMinorUnits('12.50', 'usd')).toBe(1250)
    expect(toMinorUnits('500', 'JPY')).toBe(500)
    expect(toMinorUnits('5.120', 'KWD')).toBe(5120)
    expect(toMinorUnits('5.13', 'kwd')).toBe(5130)
    expect(toMinorUnits('5', 'isk')).toBe(500)
    expect(toMinorUnits('0.01', 'usd')).toBe(1)
    expect(toMinorUnits('10.000', 'usd')).toBe(1000)
  })

  it('every amount Stripe accepts survives minor units → decimal string → minor units, trailing zeros or not', () => {
    fc.assert(
      fc.property(currency.chain((c) => fc.tuple(fc.constant(c), accepted(c), fc.nat(4))), ([c, n, zeros]) => {
        const text = fromMinorUnits(n, c)
        expect(toMinorUnits(text, c)).toBe(n)
        const padded = text.includes('.') ? text + '0'.repeat(zeros) : zeros > 0 ? `${text}.${'0'.repeat(zeros)}` : text
        expect(toMinorUnits(padded, c)).toBe(n)
      }),
    )
  })

  it('is exact: the minor units are the digits themselves, never a float', () => {
    fc.assert(
      fc.property(currency, fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.nat(), (c, whole, seed) => {
        const { exponent, places } = currencyRule(c)
        const fraction = places === 0 ? '' : String(seed % 10 ** places).padStart(places, '0')
        const text = fraction ? `${whole}.${fraction}` : String(whole)
        const expected = BigInt(`${whole}${fraction.padEnd(exponent, '0')}`)
        if (expected === 0n) return
        expect(BigInt(toMinorUnits(text, c))).toBe(expected)
      }),
    )
  })

  it('refuses, never rounds, an amount finer than the currency allows', () => {
    fc.assert(
      fc.property(currency, fc.nat({ max: 10 ** 9 }), fc.integer({ min: 1, max: 9 }), fc.nat(3), (c, whole, last, extra) => {
        const { places } = currencyRule(c)
        // places + 1 + extra decimals, the last one not zero: one digit finer than allowed at least.
        const fraction = `${'0'.repeat(places + extra)}${last}`
        const e = refusal(() => toMinorUnits(`${whole}.${fraction}`, c))
        expect(e.message).toMatch(/^args\.amount .* is finer than the currency allows: .*; it is refused, not rounded$/)
      }),
    )
  })

  it('refuses zero, negative amounts and anything that is not a plain decimal string, naming the argument', () => {
    for (const zero of ['0', '0.0', '0.00', '000']) expect(refusal(() => toMinorUnits(zero, 'usd')).message).toMatch(/^args\.amount must be more than zero/)
    for (const negative of ['-1', '-0.01', ' -5']) expect(refusal(() => toMinorUnits(negative, 'usd')).message).toMatch(/^args\.amount must be more than zero/)
    for (const garbage of ['', '1e3', '1,50', '1.', '.5', '+1', '0x10', ' 1', '1 ', 'NaN', 'Infinity', '١٢', '1.2.3']) {
      expect(refusal(() => toMinorUnits(garbage, 'usd')).message, garbage).toMatch(/^args\.amount must be a decimal string/)
    }
    for (const notString of [12.5, 1250, null, true, ['1'], { amount: '1' }]) {
      expect(refusal(() => toMinorUnits(notString, 'usd')).message).toMatch(/^args\.amount must be a decimal string such as "12\.50"/)
    }
    expect(refusal(() => toMinorUnits('1.001', 'usd', 'refund_amount')).message).toMatch(/^args\.refund_amount 1\.001 USD /)
    expect(refusal(() => toMinorUnits('99999999999999999', 'usd')).message).toMatch(/too large/)
    expect(refusal(() => toMinorUnits('1', 'us')).message).toMatch(/^args\.currency must be a three-letter ISO currency code/)
    fc.assert(
      fc.property(fc.string(), (s) => {
        if (/^\d+(\.\d+)?$/.test(s) && s.length <= 40) return
        expect(() => toMinorUnits(s, 'usd')).toThrow(InputError)
      }),
    )
  })
})
