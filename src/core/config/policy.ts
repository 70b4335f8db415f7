/**
 * [[operators]] and [policy] after schema validation: defaults applied,
 * snake_case → camelCase, and the cross-key checks a JSON Schema cannot make
 * (each returned as a problem naming its key path, like the schema's own).
 */
import type { Tier } from '../effect.js'
import { parsePublicKey } from '../crypto/keys.js'
import { DEFAULTS } from './defaults.js'
import type { OperatorConfig, PolicyCondition, PolicyConfig, PolicyRuleConfig } from './types.js'

type Table = Record<string, unknown>

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** "90s", "15m", "1h", "2d", "500ms" → milliseconds (the schema has checked the form). */
export function parseDuration(text: string): number {
  const m = /^([1-9][0-9]*)(ms|s|m|h|d)$/.exec(text)
  if (!m) throw new Error(`not a duration: ${text}`)
  return Number(m[1]) * UNIT_MS[m[2]!]!
}

export function normalizeOperators(raw: unknown): { operators: OperatorConfig[]; problems: string[] } {
  const problems: string[] = []
  const operators: OperatorConfig[] = []
  const seenNames = new Map<string, number>()
  const seenKeys = new Map<string, number>()
  ;((raw as Table[] | undefined) ?? []).forEach((o, i) => {
    const op = { name: o.name as string, publicKey: o.public_key as string }
    if (!parsePublicKey(op.publicKey)) problems.push(`operators[${i}].public_key: is not an ed25519 public key (32 bytes, base64url)`)
    const n = seenNames.get(op.name)
    if (n !== undefined) problems.push(`operators[${i}].name: "${op.name}" is already operators[${n}]; names must be unique`)
    const k = seenKeys.get(op.publicKey)
    // One key under two names would let one person count twice towards a quorum.
    if (k !== undefined) problems.push(`operators[${i}].public_key: the same key as operators[${k}]; each operator needs their own key`)
    seenNames.set(op.name, i)
    seenKeys.set(op.publicKey, i)
    operators.push(op)
  })
  return { operators, problems }
}

export function normalizePolicy(raw: Table | undefined, operatorCount: number): { policy: PolicyConfig; problems: string[] } {
  const problems: string[] = []
  const seen = new Map<string, number>()
  const rules = ((raw?.rules as Table[] | undefined) ?? []).map((r, i): PolicyRuleConfig => {
    const rule: PolicyRuleConfig = {
      name: r.name as string,
      when: ((r.when as Table[] | undefined) ?? []).map((c, j) => condition(c, `policy.rules[${i}].when[${j}]`, problems)),
      quorum: (r.quorum as number | undefined) ?? DEFAULTS.policyQuorum,
      releaseTtlMs: parseDuration((r.release_ttl as string | undefined) ?? DEFAULTS.releaseTtl),
    }
    if (typeof r.target === 'string') rule.target = r.target
    if (typeof r.action === 'string') rule.action = r.action
    if (r.tier !== undefined) rule.tier = r.tier as Tier
    if (typeof r.principal === 'string') rule.principal = r.principal
    const before = seen.get(rule.name)
    if (before !== undefined) problems.push(`policy.rules[${i}].name: "${rule.name}" is already policy.rules[${before}]; rule names must be unique`)
    seen.set(rule.name, i)
    // A quorum nobody can reach holds effects forever: say so now, not at 3 a.m.
    if (rule.quorum > operatorCount) {
      problems.push(`policy.rules[${i}].quorum: ${rule.quorum} operators are needed but ${operatorCount} ${operatorCount === 1 ? 'is' : 'are'} declared under [[operators]]`)
    }
    return rule
  })
  return { policy: { rules }, problems }
}

function condition(c: Table, path: string, problems: string[]): PolicyCondition {
  const out: PolicyCondition = { arg: c.arg as string }
  if (typeof c.above === 'string') out.above = c.above
  if (typeof c.at_least === 'string') out.atLeast = c.at_least
  if (typeof c.below === 'string') out.below = c.below
  if (typeof c.at_most === 'string') out.atMost = c.at_most
  if (typeof c.currency === 'string') out.currency = c.currency.toUpperCase()
  if (out.above === undefined && out.atLeast === undefined && out.below === undefined && out.atMost === undefined) {
    problems.push(`${path}: needs a comparison: above, at_least, below or at_most`)
  }
  return out
}
