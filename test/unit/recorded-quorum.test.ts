/**
 * recordedQuorum on hand-made histories: the quorum is found at the record
 * that completed it, each release judged at the time its record was
 * journaled; a missing rule, a missing HELD rule, or releases that never
 * overlapped leave the effect waiting with the reason.
 */
import { describe, expect, it } from 'vitest'
import type { OperatorConfig, PolicyRuleConfig } from '../../src/core/config/types.js'
import { effectDigest } from '../../src/core/crypto/digest.js'
import { generateKeyPair, type KeyPair } from '../../src/core/crypto/keys.js'
import { newNonce, signStatement } from '../../src/core/crypto/sign.js'
import { signedJson } from '../../src/core/crypto/statements.js'
import { toEffect } from '../../src/core/effect.js'
import type { State } from '../../src/core/lifecycle.js'
import { recordedQuorum, recoveredAuthorization } from '../../src/core/outbox/recorded-quorum.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import type { JournalRecord } from '../../src/core/stores/store.js'

const HOUR = 3_600_000
const T0 = Date.parse('2026-03-01T12:00:00.000Z')
const RULE: PolicyRuleConfig = { name: 'large-refunds', when: [], quorum: 2, releaseTtlMs: HOUR }
const keys: Record<string, KeyPair> = Object.fromEntries(['alice', 'bob', 'carol'].map((n) => [n, generateKeyPair('operator', n)]))
const operators: OperatorConfig[] = Object.values(keys).map((k) => ({ name: k.name, publicKey: k.publicKey }))
const authority = { operators, rules: new RulesPolicy([RULE]) }
const effect = toEffect({ thread: 't', target: 'payments', action: 'refund', args: { amount: '900.00' } })

function record(seq: number, state: State, atMs: number, data: JournalRecord['data']): JournalRecord {
  return { journal: 't', seq, effectId: effect.id, state, at: new Date(atMs).toISOString(), data, prevHash: '', hash: '' }
}

/** PROPOSED, HELD by the rule, then one HELD record per release, each signed and journaled at its time. */
function history(releases: { who: string; atMs: number }[], rule = RULE.name): JournalRecord[] {
  const out = [record(1, 'PROPOSED', T0, {}), record(2, 'HELD', T0, { rule })]
  for (const r of releases) {
    const statement = { kind: 'release' as const, effectId: effect.id, digest: effectDigest(effect), operator: r.who, rule, signedAt: new Date(r.atMs).toISOString(), expiresAt: new Date(r.atMs + HOUR).toISOString(), nonce: newNonce() }
    out.push(record(out.length + 1, 'HELD', r.atMs, { rule, release: signedJson(signStatement(statement, keys[r.who]!.seed)) }))
  }
  return out
}

describe('recordedQuorum', () => {
  it('finds the quorum at the record that completed it, judged then, however late it is asked', () => {
    const q = recordedQuorum(effect, history([{ who: 'alice', atMs: T0 }, { who: 'bob', atMs: T0 + HOUR / 2 }, { who: 'carol', atMs: T0 + 10 * HOUR }]), authority)
    expect(q).toMatchObject({ complete: true, signers: ['alice', 'bob'], completedBy: { seq: 4, at: new Date(T0 + HOUR / 2).toISOString() }, needed: 2 })
    if (!q.complete) throw new Error('unreachable')
    expect(recoveredAuthorization(q)).toMatchObject({ rule: RULE.name, signers: ['alice', 'bob'], recovered: { quorumSeq: 4 } })
    expect((recoveredAuthorization(q).releases as unknown[]).length).toBe(2)
  })

  it('releases that never overlapped form no quorum; a later third one can', () => {
    const apart = history([{ who: 'alice', atMs: T0 }, { who: 'bob', atMs: T0 + 2 * HOUR }])
    const q = recordedQuorum(effect, apart, authority)
    expect(q).toMatchObject({ complete: false, have: 1, needed: 2 })
    if (q.complete) throw new Error('unreachable')
    expect(q.reasons[0]).toMatch(/release 1 by alice: it expired at/)
    const later = history([{ who: 'alice', atMs: T0 }, { who: 'bob', atMs: T0 + 2 * HOUR }, { who: 'carol', atMs: T0 + 2.5 * HOUR }])
    expect(recordedQuorum(effect, later, authority)).toMatchObject({ complete: true, signers: ['bob', 'carol'], completedBy: { seq: 5 } })
  })

  it('waits, naming why, when the rule is gone, no release is recorded, or no rule held it', () => {
    const gone = recordedQuorum(effect, history([{ who: 'alice', atMs: T0 }, { who: 'bob', atMs: T0 }], 'retired-rule'), authority)
    expect(gone).toMatchObject({ complete: false, needed: Number.POSITIVE_INFINITY })
    expect(gone.complete || gone.reasons.join()).toMatch(/"retired-rule", which interlock.toml no longer declares/)
    const none = recordedQuorum(effect, history([]), authority)
    expect(none.complete || none.reasons).toEqual(['no release recorded yet; rule "large-refunds" needs 2'])
    const noRule = recordedQuorum(effect, [record(1, 'PROPOSED', T0, {}), record(2, 'HELD', T0, {})], authority)
    expect(noRule.complete || noRule.reasons).toEqual(['its journal names no rule that held it'])
  })
})
