/**
 * Where a target's settings came from: the interlock.toml they were read
 * from, that file's `${VAR}` values and its [[policy.rules]]. The loader
 * records it beside each [targets.<name>] table it returns, so that whatever
 * is built from those settings (createTarget, then a Gate or a Relay) knows
 * which secrets to keep out of the journal and which rules it must enforce,
 * without every caller having to pass them along: forgetting to is how a
 * relay once journaled a secret, and how a gate once dispatched what a rule
 * holds (docs/library.md, "The policy comes with the config").
 *
 * Kept in a WeakMap, not on the objects: the settings print and compare as
 * they are, and the origin dies with them.
 */
import type { PolicyRuleConfig, TargetConfig } from './types.js'

export interface ConfigOrigin {
  /** The config file (undefined for a config parsed without one). */
  file?: string
  /** Every value a `${VAR}` reference in that file expanded to. */
  secrets: readonly string[]
  /** The file's [[policy.rules]]. */
  rules: readonly PolicyRuleConfig[]
  /** This target's `${VAR}` references that are not set: it cannot be made until they are (config/load.ts). */
  unresolved?: readonly string[]
}

const origins = new WeakMap<object, ConfigOrigin>()

export function markOrigin(settings: TargetConfig, origin: ConfigOrigin): void {
  origins.set(settings, origin)
}

export function originOf(settings: TargetConfig): ConfigOrigin | undefined {
  return origins.get(settings)
}
