/** defineTarget(): a module author's mistake is said where it is made, not at the first effect. */
import { describe, expect, it } from 'vitest'
import { DispatchFault, InputError, InterlockError } from '../../src/core/errors.js'
import { defineTarget, TARGET_DEFINITION } from '../../src/core/targets/module/define-target.js'

describe('defineTarget', () => {
  it('returns the definition, marked as one', () => {
    const d = defineTarget({ create: () => ({ name: 'x', tier: 3, apply: async () => ({}), validatePremises: async () => [] }) })
    expect((d as unknown as Record<symbol, unknown>)[TARGET_DEFINITION]).toBe(true)
  })

  it.each([
    [undefined, 'defineTarget: expected an object with create(settings, ctx), got nothing'],
    [{}, 'defineTarget: create must be a function (settings, ctx) => EffectTarget, got nothing'],
    [{ create: 'x' }, 'defineTarget: create must be a function (settings, ctx) => EffectTarget, got a string'],
    [{ create: () => null, settings: [] }, 'defineTarget: settings must be a JSON Schema object, got an array'],
  ])('refuses %j', (definition, message) => {
    expect(() => defineTarget(definition as never)).toThrow(new InputError(message))
  })
})

describe('errors made by another copy of the package', () => {
  it('are instances of the same-named classes here, and of nothing else', () => {
    // What another copy's DispatchFault looks like from here: another class, the same brand.
    const brand = Symbol.for('agent-interlock.error-classes')
    const foreign = Object.assign(new Error('refused'), { kind: 'refused', [brand]: ['DispatchFault', 'InterlockError'] })
    expect(foreign).toBeInstanceOf(DispatchFault)
    expect(foreign).toBeInstanceOf(InterlockError)
    expect(foreign).not.toBeInstanceOf(InputError)
    expect(new Error('plain')).not.toBeInstanceOf(DispatchFault)
    expect(new InputError('x')).not.toBeInstanceOf(DispatchFault)
  })
})
