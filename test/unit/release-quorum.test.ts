/**
 * releaseQuorum against mutated statements: every valid quorum is accepted;
 * forged, altered, replayed, expired, wrong-key, wrong-digest, untrusted,
 * duplicate and below-quorum releases are each refused with their reason.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { OperatorConfig, PolicyRuleConfig } from '../../src/core/config/types.js'
import { effectDigest } from '../../src/core/crypto/digest.js'
import { generateKeyPair, type KeyPair } from '../../src/core/crypto/keys.js'
import { newNonce, signStatement } from '../../src/core/crypto/sign.js'
import type { ReleaseStatement, Signed } from '../../src/core/crypto/statements.js'
import { toEffect } from '../../src/core/effect.js'
import { releaseQuorum } from '../../src/core/outbox/release-check.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'

const NOW = new Date('2026-03-01T12:00:00.000Z')
const HOUR = 3_600_000
const RULE: PolicyRuleConfig = { name: 'large-refunds', when: [], quorum: 2, releaseTtlMs: HOUR }
const policy = new RulesPolicy([RULE])
const keys: Record<string, KeyPair> = Object.fromEntries(['alice', 'bob', 'carol', 'mallory'].map((n) => [n, generateKeyPair('operator', n)]))
// mallory has a key but is not trusted.
const operators: OperatorConfig[] = ['alice', 'bob', 'carol'].map((n) => ({ name: n, publicKey: keys[n]!.publicKey }))
const effect = toEffect({ thread: 'agent-1', target: 'payments', action: 'refund', args: { amount: '900.00', currency: 'USD' }, premises: { charge: 'ch_1' } })
const held = { effect, rule: RULE.name }

function statement(operator: string, over: Partial<ReleaseStatement> = {}): ReleaseStatement {
  return {
    kind: 'release',
    effectId: effect.id,
    digest: effectDigest(effect),
    operator,
    rule: RULE.name,
    signedAt: new Date(NOW.getTime() - 60_000).toISOString(),
    expiresAt: new Date(NOW.getTime() - 60_000 + HOUR).toISOString(),
    nonce: newNonce(),
    ...over,
  }
}
const signed = (operator: string, over: Partial<ReleaseStatement> = {}, signer = operator): Signed<ReleaseStatement> =>
  signStatement(statement(operator, over), keys[signer]!.seed)

const check = (statements: Signed[], h = held) => releaseQuorum(h, statements, operators, policy, NOW)

const trusted = fc.constantFrom('alice', 'bob', 'carol')

describe('releaseQuorum', () => {
  it('accepts every quorum of distinct trusted operators, in any order', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(['alice', 'bob', 'carol'], { minLength: 2 }), fc.integer({ min: 1, max: HOUR / 1000 }), (names, ttlS) => {
        const statements = names.map((n) => signed(n, { expiresAt: new Date(NOW.getTime() - 60_000 + ttlS * 1000 + 60_000).toISOString() }))
        const ttlOk = ttlS * 1000 + 60_000 <= HOUR
        const r = check(statements)
        if (ttlOk) {
          expect(r.reasons).toEqual([])
          expect(r.ok).toBe(true)
          expect(r.signers).toEqual(names)
        } else {
          expect(r.ok).toBe(false)
        }
      }),
    )
  })

  it('refuses a statement with any field changed after signing (forged or altered)', () => {
    const fields = ['effectId', 'digest', 'rule', 'signedAt', 'expiresAt', 'nonce'] as const
    fc.assert(
      fc.property(trusted, fc.constantFrom(...fields), fc.string({ minLength: 1 }), (op, field, junk) => {
        const good = signed(op)
        const value = good.statement[field] + junk
        const forged: Signed = { statement: { ...good.statement, [field]: value } as ReleaseStatement, signature: good.signature }
        const r = check([forged, signed(op === 'alice' ? 'bob' : 'alice')])
        expect(r.ok).toBe(false)
        expect(r.reasons[0]).toMatch(/signature does not verify/)
      }),
    )
  })

  it('refuses a flipped signature byte, or a signature moved to another operator', () => {
    fc.assert(
      fc.property(trusted, fc.integer({ min: 0, max: 63 }), fc.integer({ min: 1, max: 255 }), (op, i, bit) => {
        const good = signed(op)
        const sig = Buffer.from(good.signature, 'base64url')
        sig[i]! ^= bit
        const r = check([{ ...good, signature: sig.toString('base64url') }])
        expect(r.reasons[0]).toMatch(/signature does not verify/)
      }),
    )
    const asBob: Signed = { statement: { ...signed('alice').statement, operator: 'bob' }, signature: signed('alice').signature }
    expect(check([asBob]).reasons[0]).toMatch(/release 1 by bob: the signature does not verify with bob's key/)
  })

  it('refuses a statement signed with the wrong key', () => {
    fc.assert(
      fc.property(trusted, fc.constantFrom('alice', 'bob', 'carol', 'mallory'), (op, signer) => {
        fc.pre(op !== signer)
        expect(check([signed(op, {}, signer)]).reasons[0]).toMatch(/signature does not verify/)
      }),
    )
  })

  it('refuses an untrusted operator, even with a valid signature of their own', () => {
    expect(check([signed('mallory'), signed('alice')]).reasons[0]).toBe('release 1 by mallory: "mallory" is not a trusted operator in interlock.toml')
  })

  it('refuses an expired release', () => {
    fc.assert(
      fc.property(trusted, fc.integer({ min: 0, max: HOUR }), (op, agoMs) => {
        const expiresAt = new Date(NOW.getTime() - agoMs)
        const s = signed(op, { expiresAt: expiresAt.toISOString(), signedAt: new Date(expiresAt.getTime() - 1000).toISOString() })
        expect(check([s]).reasons[0]).toMatch(/expired at/)
      }),
    )
  })

  it('refuses a release valid for longer than the rule allows, or signed in the future', () => {
    expect(check([signed('alice', { expiresAt: new Date(NOW.getTime() + 2 * HOUR).toISOString() })]).reasons[0]).toMatch(/longer than rule/)
    const future = new Date(NOW.getTime() + HOUR)
    expect(check([signed('alice', { signedAt: future.toISOString(), expiresAt: new Date(future.getTime() + 1000).toISOString() })]).reasons[0]).toMatch(/in the future/)
  })

  it('refuses a replayed statement (its nonce again)', () => {
    fc.assert(
      fc.property(trusted, (op) => {
        const s = signed(op)
        const r = check([s, s])
        expect(r.ok).toBe(false)
        expect(r.reasons[0]).toMatch(/release 2 by .*: its nonce was already used: a replayed statement/)
        expect(r.signers).toEqual([op])
      }),
    )
    const s = signed('alice')
    expect(releaseQuorum(held, [s, signed('bob')], operators, policy, NOW, { usedNonces: new Set([s.statement.nonce]) }).reasons[0]).toMatch(/replayed/)
  })

  it('refuses releases signed before the args or premises changed (wrong digest)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.constant('args'), fc.constant('premises')), fc.string({ minLength: 1, maxLength: 8 }), (what, v) => {
        const changed = what === 'args' ? { ...effect, args: { ...effect.args, amount: `9${v}` } } : { ...effect, premises: { charge: v } }
        fc.pre(effectDigest(changed) !== effectDigest(effect))
        const r = check([signed('alice'), signed('bob')], { effect: changed, rule: RULE.name })
        expect(r.ok).toBe(false)
        expect(r.reasons.slice(0, 2).every((x) => /signed for digest/.test(x))).toBe(true)
      }),
    )
  })

  it('refuses a release for another effect or another rule', () => {
    const other = toEffect({ ...effect, args: { amount: '1.00' } })
    expect(check([signed('alice', { effectId: other.id })]).reasons[0]).toMatch(/signed for effect/)
    expect(check([signed('alice', { rule: 'other-rule' })]).reasons[0]).toMatch(/releases rule "other-rule"/)
  })

  it('counts an operator once however many releases they sign', () => {
    fc.assert(
      fc.property(trusted, fc.integer({ min: 2, max: 5 }), (op, n) => {
        const r = check(Array.from({ length: n }, () => signed(op)))
        expect(r.ok).toBe(false)
        expect(r.signers).toEqual([op])
        expect(r.reasons.filter((x) => x.includes('already counted once'))).toHaveLength(n - 1)
        expect(r.reasons.at(-1)).toBe('below quorum: 1 of 2 distinct operators have released it under rule "large-refunds"')
      }),
    )
  })

  it('is below quorum with one valid release, or none', () => {
    expect(check([signed('carol')])).toMatchObject({ ok: false, signers: ['carol'], needed: 2 })
    expect(check([]).reasons).toEqual(['below quorum: 0 of 2 distinct operators have released it under rule "large-refunds"'])
  })

  it('refuses everything for a rule no longer declared', () => {
    const r = check([signed('alice'), signed('bob')], { effect, rule: 'gone' })
    expect(r.ok).toBe(false)
    expect(r.reasons[0]).toMatch(/no longer declares/)
  })
})
