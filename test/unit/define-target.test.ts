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

describe('defineTarget tools', () => {
  const create = () => ({ name: 'x', tier: 3 as const, apply: async () => ({}), validatePremises: async () => [] })
  it.each([
    [{ tools: [] }, 'defineTarget: tools must be an object of tools by action name, got an array'],
    [{ tools: { 'bad name': {} } }, 'defineTarget: tools: "bad name" is not a tool name (1-128 letters, digits, _ . -)'],
    [{ tools: { open: 'x' } }, 'defineTarget: tools.open must be an object, got a string'],
    [{ tools: { open: { inputSchema: { type: 'string' } } } }, 'defineTarget: tools.open.inputSchema must be a JSON Schema of type "object"'],
  ])('refuses %j', (more, message) => {
    expect(() => defineTarget({ create, ...(more as object) })).toThrow(new InputError(message))
  })

  it('takes tools with an object schema, or none', () => {
    expect(defineTarget({ create, tools: { open: { description: 'Open one', inputSchema: { type: 'object' } }, close: {} } }).tools).toHaveProperty('open')
  })
})
