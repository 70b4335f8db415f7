/**
 * What a target made from interlock.toml carries from its file (see
 * config/origin.ts): the secrets it was given and the policy rules in force
 * where it was declared. A Gate, an Outbox or a Relay reads it when the
 * target is registered: the secrets are kept out of the journal
 * (secrets/journal-secrets.ts) and the rules must be enforced
 * (policy/required.ts).
 */
import type { ConfigOrigin } from '../config/origin.js'
import type { EffectTarget } from './target.js'

const origins = new WeakMap<EffectTarget, ConfigOrigin>()

export function markTarget(target: EffectTarget, origin: ConfigOrigin): void {
  origins.set(target, origin)
}

export function targetOrigin(target: EffectTarget): ConfigOrigin | undefined {
  return origins.get(target)
}
