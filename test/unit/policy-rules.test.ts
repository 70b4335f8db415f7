/** [[operators]] and [[policy.rules]] in interlock.toml, and the rules policy: decimal thresholds, scope, fail safe. */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../src/core/config/load.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { toEffect, type Effect } from '../../src/core/effect.js'
import { ConfigError } from '../../src/core/errors.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'

const FILE = '/srv/agent/interlock.toml'
const ALICE = generateKeyPair('operator', 'alice').publicKey
const BOB = generateKeyPair('operator', 'bob').publicKey

const OPERATORS = `
[[operators]]
name = "alice"
public_key = "${ALICE}"

[[operators]]
name = "bob"
public_key = "${BOB}"
`

const REFUNDS = `${OPERATORS}
[[policy.rules]]
name = "large-refunds"
target = "payments"
action = "refund"
quorum = 2
release_ttl = "15m"
when = [{ arg = "amount", above = "500.00", currency = "USD" }]

[[policy.rules]]
name = "all-merges"
action = "merge"
tier = 2
`

function problemsOf(text: string): string[] {
  try {
    parseConfig(text, { file: FILE, env: {} })
  } catch (e) {
    if (e instanceof ConfigError) return [...e.problems]
    throw e
  }
  return []
}

const refund = (args: Record<string, unknown>, target = 'payments'): Effect =>
  toEffect({ thread: 't', target, action: 'refund', args: args as Effect['args'] })

describe('config: [[operators]] and [[policy.rules]]', () => {
  it('normalises operators and rules with their defaults', () => {
    const config = parseConfig(REFUNDS, { file: FILE, env: {} })
    expect(config.operators).toEqual([
      { name: 'alice', publicKey: ALICE },
      { name: 'bob', publicKey: BOB },
    ])
    expect(config.policy.rules).toEqual([
      { name: 'large-refunds', target: 'payments', action: 'refund', quorum: 2, releaseTtlMs: 900_000, when: [{ arg: 'amount', above: '500.00', currency: 'USD' }] },
      { name: 'all-merges', action: 'merge', tier: 2, quorum: 1, releaseTtlMs: 3_600_000, when: [] },
    ])
  })

  it('is empty when absent', () => {
    const config = parseConfig('', { file: FILE, env: {} })
    expect(config.operators).toEqual([])
    expect(config.policy).toEqual({ rules: [] })
  })

  it('names every problem by its key path', () => {
    expect(problemsOf(`[[operators]]\nname = "alice"\npublic_key = "rsa:abc"\n`)).toEqual([
      'operators[0].public_key: must be "ed25519:" followed by 43 base64url characters, as printed by `interlock operator keygen`',
    ].map((p) => p.replace('operators[0]', 'operators.0')))
    expect(problemsOf(`${OPERATORS}[[policy.rules]]\nname = "r"\nquorum = 3\n`)).toEqual([
      'policy.rules[0].quorum: 3 operators are needed but 2 are declared under [[operators]]',
    ])
    expect(problemsOf(`${OPERATORS}[[policy.rules]]\nname = "r"\n[[policy.rules]]\nname = "r"\n`)).toEqual([
      'policy.rules[1].name: "r" is already policy.rules[0]; rule names must be unique',
    ])
    expect(problemsOf(`${OPERATORS}[[operators]]\nname = "alice"\npublic_key = "${ALICE}"\n`)).toEqual([
      'operators[2].name: "alice" is already operators[0]; names must be unique',
      'operators[2].public_key: the same key as operators[0]; each operator needs their own key',
    ])
    expect(problemsOf(`${OPERATORS}[[policy.rules]]\nname = "r"\nwhen = [{ arg = "amount" }]\n`)).toEqual([
      'policy.rules[0].when[0]: needs a comparison: above, at_least, below or at_most',
    ])
    const bad = problemsOf(`${OPERATORS}[[policy.rules]]\nname = "r"\nrelease_ttl = "1 hour"\nwhen = [{ arg = "amount", above = 500 }]\n`)
    expect(bad).toContain('policy.rules.0.release_ttl: must be a whole number followed by ms, s, m, h or d, e.g. "1h"')
    expect(bad).toContain('policy.rules.0.when.0.above: must be a string')
  })
})

describe('RulesPolicy', () => {
  const policy = new RulesPolicy(parseConfig(REFUNDS, { file: FILE, env: {} }).policy.rules)

  it('holds refunds above 500.00 USD, exactly, and names the rule and the reason', () => {
    expect(policy.evaluate(refund({ amount: '500.00', currency: 'USD' }), 1)).toBeNull()
    expect(policy.evaluate(refund({ amount: '500.01', currency: 'usd' }), 1)).toEqual({
      rule: 'large-refunds',
      reason: 'args.amount 500.01 USD is above 500.00',
    })
    expect(policy.evaluate(refund({ amount: '500.000000000000000000001', currency: 'USD' }), 1)?.rule).toBe('large-refunds')
    expect(policy.evaluate(refund({ amount: 900, currency: 'USD' }), 1)?.rule).toBe('large-refunds')
  })

  it('does not hold other currencies, targets or actions', () => {
    expect(policy.evaluate(refund({ amount: '900.00', currency: 'EUR' }), 1)).toBeNull()
    expect(policy.evaluate(refund({ amount: '900.00', currency: 'USD' }, 'other'), 1)).toBeNull()
  })

  it('holds, fail safe, when the amount or currency is missing or not a decimal', () => {
    for (const args of [{ currency: 'USD' }, { amount: '1,000', currency: 'USD' }, { amount: '1e3', currency: 'USD' }, { amount: { v: 1 }, currency: 'USD' }, { amount: '900' }]) {
      const hold = policy.evaluate(refund(args), 1)
      expect(hold?.rule, JSON.stringify(args)).toBe('large-refunds')
      expect(hold?.reason).toContain('held to be safe')
    }
  })

  it('matches by tier and holds everything a rule without conditions covers', () => {
    const merge = toEffect({ thread: 't', target: 'gh', action: 'merge', args: { pr: 1 } })
    expect(policy.evaluate(merge, 2)).toEqual({ rule: 'all-merges', reason: 'every effect on action merge, tier 2 is held' })
    expect(policy.evaluate(merge, 1)).toBeNull()
  })

  it('matches by principal, exactly or by a prefix ending in *; an effect that names none matches no such rule', () => {
    const p = new RulesPolicy(
      parseConfig(`${OPERATORS}\n[[policy.rules]]\nname = "ci-bot"\nprincipal = "token:ci-bot"\n\n[[policy.rules]]\nname = "one-issuer"\nprincipal = "oauth:https://id.example.com#*"\n`, { file: FILE, env: {} }).policy.rules,
    )
    const by = (principal?: string) => toEffect({ thread: 't', target: 'fs', action: 'write_file', args: {}, principal })
    expect(p.evaluate(by('token:ci-bot'), 3)).toEqual({ rule: 'ci-bot', reason: 'every effect on principal token:ci-bot is held' })
    expect(p.evaluate(by('token:ci-bot-2'), 3)).toBeNull()
    expect(p.evaluate(by('oauth:https://id.example.com#user-42'), 3)?.rule).toBe('one-issuer')
    expect(p.evaluate(by('oauth:https://other.example.com#user-42'), 3)).toBeNull()
    expect(p.evaluate(by(), 3)).toBeNull()
    expect(problemsOf(`${OPERATORS}\n[[policy.rules]]\nname = "x"\nprincipal = ""\n`).join('\n')).toMatch(/policy\.rules\.0\.principal|policy\.rules\[0\]\.principal/)
  })

  it('picks the matching rule with the largest quorum', () => {
    const p = new RulesPolicy([
      { name: 'one', when: [], quorum: 1, releaseTtlMs: 1000 },
      { name: 'two', when: [], quorum: 2, releaseTtlMs: 1000 },
      { name: 'two-again', when: [], quorum: 2, releaseTtlMs: 1000 },
    ])
    expect(p.evaluate(refund({}), 1)?.rule).toBe('two')
  })

  it('agrees with exact decimal comparison for any amount (property)', () => {
    const cents = fc.bigInt({ min: 0n, max: 10n ** 12n })
    fc.assert(
      fc.property(cents, (c) => {
        const text = `${c / 100n}.${String(c % 100n).padStart(2, '0')}`
        const held = policy.evaluate(refund({ amount: text, currency: 'USD' }), 1) !== null
        expect(held).toBe(c > 50_000n)
      }),
    )
  })
})
