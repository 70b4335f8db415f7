/**
 * The targets a child plan names: as settings in the plan, or (`config`) the
 * [targets] of an interlock.toml, read as the CLI reads it. An API declared
 * only in interlock.toml (a request template for Twilio, Linear, Jira) is
 * built from its file in the child and in the recovering parent alike.
 */
import { loadConfig } from '../../src/core/config/load.js'
import type { TargetConfig } from '../../src/core/config/types.js'

export interface PlanTargets {
  targets?: Record<string, TargetConfig>
  /** An interlock.toml whose [targets] are used instead of `targets` (its [store] is not: the plan's is). */
  config?: string
  /** The environment its `${VAR}`s are read from (default: none). */
  configEnv?: Record<string, string>
}

export function planTargets(plan: PlanTargets): Record<string, TargetConfig> {
  if (plan.config) return loadConfig({ path: plan.config, env: { ...plan.configEnv } }).targets
  if (!plan.targets) throw new Error('a child plan names its targets or an interlock.toml (config)')
  return plan.targets
}
