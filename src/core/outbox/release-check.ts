/**
 * When may a HELD effect go on? Only when a quorum of distinct trusted
 * operators has signed valid, unexpired, unused releases that match the
 * effect's current digest (its args and premises now, not when signed).
 *
 * Every statement that does not count says why, so an operator (and a test)
 * can tell a forgery from an expiry from a replay. Pure: time, keys and rules
 * come in as arguments; the release command and the relay both ask it.
 */
import type { OperatorConfig, PolicyRuleConfig } from '../config/types.js'
import { effectDigest } from '../crypto/digest.js'
import { verifyStatement } from '../crypto/sign.js'
import type { ReleaseStatement, Signed } from '../crypto/statements.js'
import type { Effect } from '../effect.js'

/** A signer's clock may run ahead of ours by this much. */
export const CLOCK_SKEW_MS = 5 * 60_000

export interface HeldEffect {
  effect: Effect
  /** The rule that held it, as journaled in its HELD record. */
  rule: string
}

/** Where the rule's quorum and release TTL come from (RulesPolicy has it). */
export interface RuleSource {
  rule(name: string): PolicyRuleConfig | undefined
}

export interface QuorumResult {
  ok: boolean
  /** Why each statement that does not count was refused, then why the quorum is not met. */
  reasons: string[]
  /** Operators whose releases count, in order. */
  signers: string[]
  /** The releases that count: what an AUTHORIZED record carries. */
  accepted: Signed<ReleaseStatement>[]
  needed: number
}

export interface QuorumOptions {
  /** Nonces already spent elsewhere (e.g. on another record): a statement carrying one is a replay. */
  usedNonces?: ReadonlySet<string>
}

export function releaseQuorum(
  held: HeldEffect,
  statements: readonly Signed[],
  operators: readonly OperatorConfig[],
  policy: RuleSource,
  now: Date,
  options: QuorumOptions = {},
): QuorumResult {
  const rule = policy.rule(held.rule)
  if (!rule) {
    return {
      ok: false,
      reasons: [`the effect is held by rule "${held.rule}", which interlock.toml no longer declares; restore the rule or deny the effect`],
      signers: [],
      accepted: [],
      needed: Number.POSITIVE_INFINITY,
    }
  }
  const digest = effectDigest(held.effect)
  const keys = new Map(operators.map((o) => [o.name, o.publicKey]))
  const nonces = new Set(options.usedNonces ?? [])
  const reasons: string[] = []
  const accepted: Signed<ReleaseStatement>[] = []
  const signers = new Set<string>()

  for (const [i, signed] of statements.entries()) {
    const why = refusal(signed, { effect: held.effect, rule, digest, keys, nonces, signers, now })
    const s = signed.statement as Partial<ReleaseStatement>
    if (typeof s.nonce === 'string') nonces.add(s.nonce)
    if (why) {
      reasons.push(`release ${i + 1}${typeof s.operator === 'string' ? ` by ${s.operator}` : ''}: ${why}`)
      continue
    }
    signers.add(s.operator!)
    accepted.push(signed as Signed<ReleaseStatement>)
  }
  const ok = signers.size >= rule.quorum
  if (!ok) reasons.push(`below quorum: ${signers.size} of ${rule.quorum} distinct operators have released it under rule "${rule.name}"`)
  return { ok, reasons, signers: [...signers], accepted, needed: rule.quorum }
}

interface Context {
  effect: Effect
  rule: PolicyRuleConfig
  digest: string
  keys: ReadonlyMap<string, string>
  nonces: ReadonlySet<string>
  signers: ReadonlySet<string>
  now: Date
}

/** Why this statement does not count, or undefined when it does. */
function refusal(signed: Signed, c: Context): string | undefined {
  const s = signed.statement as unknown as Record<string, unknown>
  if (!s || s.kind !== 'release') return `is a ${String(s?.kind)} statement, not a release`
  const strings = ['effectId', 'digest', 'operator', 'rule', 'signedAt', 'expiresAt', 'nonce'] as const
  for (const f of strings) if (typeof s[f] !== 'string' || s[f] === '') return `is malformed: ${f} is missing`
  const st = s as unknown as ReleaseStatement
  const key = c.keys.get(st.operator)
  if (!key) return `"${st.operator}" is not a trusted operator in interlock.toml`
  // The signature first: nothing else in an unsigned or forged statement can be believed.
  if (!verifyStatement(st, signed.signature, key)) return `the signature does not verify with ${st.operator}'s key (forged, altered or signed with another key)`
  if (st.effectId !== c.effect.id) return `it was signed for effect ${st.effectId}, not ${c.effect.id}`
  if (st.digest !== c.digest) return `it was signed for digest ${st.digest.slice(0, 12)}…, but the effect's args and premises now digest to ${c.digest.slice(0, 12)}…`
  if (st.rule !== c.rule.name) return `it releases rule "${st.rule}", but the effect is held by rule "${c.rule.name}"`
  const signedAt = Date.parse(st.signedAt)
  const expiresAt = Date.parse(st.expiresAt)
  if (Number.isNaN(signedAt) || Number.isNaN(expiresAt)) return 'is malformed: signedAt or expiresAt is not a time'
  if (expiresAt <= c.now.getTime()) return `it expired at ${st.expiresAt}`
  if (signedAt > c.now.getTime() + CLOCK_SKEW_MS) return `it is signed at ${st.signedAt}, in the future`
  if (expiresAt - signedAt > c.rule.releaseTtlMs) return `it is valid for longer than rule "${c.rule.name}" allows (${c.rule.releaseTtlMs} ms)`
  if (c.nonces.has(st.nonce)) return `its nonce was already used: a replayed statement`
  if (c.signers.has(st.operator)) return `${st.operator} is already counted once; a quorum needs distinct operators`
  return undefined
}
