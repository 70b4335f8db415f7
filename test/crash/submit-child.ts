/**
 * A worker process for crash tests: submits one effect through a gate built
 * from the plan in argv[2], with whatever crash point the parent armed in the
 * environment, and prints the outcome if it lives that long.
 */
import { readFileSync } from 'node:fs'
import type { PolicyRuleConfig, StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import type { EffectInput } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import type { RetryOptions } from '../../src/core/gate-context.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTargets } from '../../src/core/targets/registry.js'

export interface ChildPlan {
  store: StoreConfig
  targets: Record<string, TargetConfig>
  effects: EffectInput[]
  /** Policy rules that hold effects (default: none). */
  rules?: PolicyRuleConfig[]
  /** Overrides of the child gate's retry settings (e.g. a small max_wait_ms). */
  retry?: Partial<RetryOptions>
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as ChildPlan
const store = await openStore(plan.store)
const gate = new Gate({
  store,
  targets: createTargets(plan.targets).values(),
  policy: plan.rules ? new RulesPolicy(plan.rules) : undefined,
  retry: { maxAttempts: 3, backoffMs: 10, ...plan.retry },
})
const outcomes = await Promise.all(plan.effects.map((e) => gate.submit(e)))
process.stdout.write(`${JSON.stringify(outcomes)}\n`)
await gate.close()
await store.close()
