/**
 * The Policy port (policy.ts) implemented by interlock.toml's [[policy.rules]].
 *
 * A rule matches an effect by target, action, tier and principal (each
 * optional; an effect that names no principal matches no rule that names
 * one), then by its `when` conditions on the arguments, all of which must hold. Amounts
 * are compared as exact decimals (decimal.js), never as floats: 500.00 and
 * 500.001 differ, and "0.1" + "0.2" is "0.3".
 *
 * Fail safe: a condition naming an argument that is missing, or that is not
 * a decimal (a string like "1,000", an object, NaN), holds the effect and
 * says why: a rule that cannot tell must not let an effect through. So does a
 * currency condition on an effect without args.currency. An effect in another
 * currency is not held by that condition.
 *
 * Several matching rules: the one with the largest quorum holds (the first
 * such in the file), so the strictest release applies.
 */
import { Decimal } from 'decimal.js'
import type { JsonValue } from '../canonical-json.js'
import type { PolicyCondition, PolicyRuleConfig } from '../config/types.js'
import type { Effect, Tier } from '../effect.js'
import type { Hold, Policy } from '../policy.js'
import { principalMatches } from '../principal-pattern.js'

const DECIMAL_TEXT = /^-?[0-9]+(\.[0-9]+)?$/

/** A condition's verdict: holds, does not, or cannot tell (which holds, fail safe). */
type Verdict = { holds: boolean; reason: string }

export class RulesPolicy implements Policy {
  constructor(readonly rules: readonly PolicyRuleConfig[]) {}

  evaluate(effect: Effect, tier: Tier): Hold | null {
    let best: { rule: PolicyRuleConfig; reason: string } | undefined
    for (const rule of this.rules) {
      const reason = matchRule(rule, effect, tier)
      if (reason !== undefined && (!best || rule.quorum > best.rule.quorum)) best = { rule, reason }
    }
    return best ? { rule: best.rule.name, reason: best.reason } : null
  }

  rule(name: string): PolicyRuleConfig | undefined {
    return this.rules.find((r) => r.name === name)
  }
}

/** Why the rule holds the effect, or undefined when it does not. */
export function matchRule(rule: PolicyRuleConfig, effect: Effect, tier: Tier): string | undefined {
  if (rule.target !== undefined && rule.target !== effect.target) return undefined
  if (rule.action !== undefined && rule.action !== effect.action) return undefined
  if (rule.tier !== undefined && rule.tier !== tier) return undefined
  if (rule.principal !== undefined && !principalMatches(rule.principal, effect.principal)) return undefined
  const reasons: string[] = []
  for (const c of rule.when) {
    const v = checkCondition(c, effect.args)
    if (!v.holds) return undefined
    reasons.push(v.reason)
  }
  const scope = [rule.target && `target ${rule.target}`, rule.action && `action ${rule.action}`, rule.tier && `tier ${rule.tier}`, rule.principal && `principal ${rule.principal}`].filter(Boolean)
  return reasons.length > 0 ? reasons.join('; ') : `every effect on ${scope.join(', ') || 'any target'} is held`
}

export function checkCondition(c: PolicyCondition, args: Effect['args']): Verdict {
  const name = `args.${c.arg}`
  if (c.currency !== undefined) {
    const currency = args.currency
    if (typeof currency !== 'string' || currency.length === 0) {
      return { holds: true, reason: `args.currency is missing, so ${name} cannot be compared in ${c.currency} (held to be safe)` }
    }
    if (currency.toUpperCase() !== c.currency) return { holds: false, reason: `args.currency is ${currency}, not ${c.currency}` }
  }
  const raw = lookup(args, c.arg)
  if (raw === undefined || raw === null) return { holds: true, reason: `${name} is missing (held to be safe)` }
  const value = toDecimal(raw)
  if (!value) return { holds: true, reason: `${name} is ${JSON.stringify(raw)}, not a decimal number (held to be safe)` }
  const unit = c.currency ? ` ${c.currency}` : ''
  // As written, so the reason shows what the agent sent ("900.00", not 900).
  const shown = `${name} ${typeof raw === 'string' ? raw.trim() : value.toString()}${unit}`
  const checks: [string | undefined, (x: Decimal) => boolean, string][] = [
    [c.above, (x) => value.gt(x), 'above'],
    [c.atLeast, (x) => value.gte(x), 'at least'],
    [c.below, (x) => value.lt(x), 'below'],
    [c.atMost, (x) => value.lte(x), 'at most'],
  ]
  const said: string[] = []
  for (const [limit, test, words] of checks) {
    if (limit === undefined) continue
    if (!test(new Decimal(limit))) return { holds: false, reason: `${shown} is not ${words} ${limit}` }
    said.push(`${words} ${limit}`)
  }
  return { holds: true, reason: `${shown} is ${said.join(' and ')}` }
}

function lookup(args: Effect['args'], path: string): JsonValue | undefined {
  let v: JsonValue | undefined = args
  for (const key of path.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, key)) return undefined
    v = v[key]
  }
  return v
}

/** Strings must be plain decimals ("1,000" or "1e3" are not); numbers must be finite. */
function toDecimal(v: JsonValue): Decimal | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? new Decimal(String(v)) : undefined
  if (typeof v === 'string' && DECIMAL_TEXT.test(v.trim())) return new Decimal(v.trim())
  return undefined
}
