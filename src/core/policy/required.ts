/**
 * A config's policy can never be silently dropped (docs/design.md, "The trust boundary").
 *
 * Targets made from an interlock.toml that has [[policy.rules]] carry those
 * rules (targets/origin.ts). Whoever authorizes effects on them (a Gate, a
 * Relay) must be given a policy that enforces them: building one without a
 * policy, with `allowAll`, or with a RulesPolicy missing some of those rules
 * is a ConfigError naming the rules and the fix, not a default that lets
 * every effect through. A Policy of the caller's own making is trusted to be
 * deliberate.
 */
import type { PolicyRuleConfig } from '../config/types.js'
import { ConfigError } from '../errors.js'
import { allowAll, type Policy } from '../policy.js'
import { targetOrigin } from '../targets/origin.js'
import type { EffectTarget } from '../targets/target.js'
import { RulesPolicy } from './rules.js'

export function requirePolicy(who: string, targets: Iterable<EffectTarget>, policy: Policy | undefined): void {
  const missing = new Map<string, { rule: PolicyRuleConfig; file?: string; targets: string[] }>()
  for (const t of targets) {
    const origin = targetOrigin(t)
    for (const rule of origin?.rules ?? []) {
      if (enforces(policy, rule)) continue
      const entry = missing.get(rule.name) ?? { rule, file: origin?.file, targets: [] }
      entry.targets.push(t.name)
      missing.set(rule.name, entry)
    }
  }
  if (missing.size === 0) return
  const entries = [...missing.values()]
  const file = entries[0]!.file ?? 'interlock.toml'
  const names = entries.map((e) => `"${e.rule.name}"`).join(', ')
  const given = policy === undefined ? 'no policy' : policy === allowAll ? 'allowAll' : 'a policy without them'
  throw new ConfigError(
    `${who} was built with targets from ${file}, whose [[policy.rules]] ${names} it would not enforce (it was given ${given})`,
    entries.map((e) => `policy.rules "${e.rule.name}" holds effects on ${[...new Set(e.targets)].join(', ')}`),
    {
      hint: `Build it with openInterlock() from the same file (it brings the config's policy), or pass policy: new RulesPolicy(config.policy.rules).`,
      context: { file, rules: entries.map((e) => e.rule.name) },
    },
  )
}

function enforces(policy: Policy | undefined, rule: PolicyRuleConfig): boolean {
  if (policy === undefined || policy === allowAll) return false
  if (!(policy instanceof RulesPolicy)) return true
  return policy.rules.some((r) => r === rule || (r.name === rule.name && JSON.stringify(r) === JSON.stringify(rule)))
}
