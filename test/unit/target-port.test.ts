import { describe, expect, it } from 'vitest'
import { InputError } from '../../src/core/errors.js'
import { assertTarget, type EffectTarget } from '../../src/core/targets/target.js'

function fake(over: Partial<EffectTarget>): EffectTarget {
  return { name: 'fake', tier: 1, validatePremises: async () => [], apply: async () => ({}), ...over }
}

describe('assertTarget', () => {
  it('refuses a tier-2 target without query, naming the target and the way out', () => {
    expect(() => assertTarget(fake({ tier: 2 }))).toThrow(InputError)
    expect(() => assertTarget(fake({ tier: 2 }))).toThrow(/target fake: a tier-2 target must implement query\(\); without it declare tier 3/)
  })

  it('accepts a tier-2 target with query, and tiers 1 and 3 without', () => {
    expect(() => assertTarget(fake({ tier: 2, query: async () => null }))).not.toThrow()
    expect(() => assertTarget(fake({ tier: 1 }))).not.toThrow()
    expect(() => assertTarget(fake({ tier: 3 }))).not.toThrow()
  })

  it('refuses an unknown tier and a target missing apply or validatePremises', () => {
    expect(() => assertTarget(fake({ tier: 4 as never }))).toThrow(/tier must be 1, 2 or 3/)
    expect(() => assertTarget(fake({ apply: undefined as never }))).toThrow(/must implement apply\(\) and validatePremises\(\)/)
  })
})
