/**
 * A worker process for crash tests: submits the effects of the plan in
 * argv[2] through a gate built from it (recovering first when the plan says
 * so, as a restarted agent does), with whatever crash point the parent armed
 * in the environment, and prints the outcomes if it lives that long. A plan
 * may name a negative control (controls.ts) for the gate to run under.
 */
import { readFileSync } from 'node:fs'
import type { PolicyRuleConfig, StoreConfig } from '../../src/core/config/types.js'
import type { EffectInput } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import type { RetryOptions } from '../../src/core/gate-context.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { controlNamed, processPorts, type ControlName } from './controls.js'
import { planTargets, type PlanTargets } from './plan-targets.js'

export interface ChildPlan extends PlanTargets {
  store: StoreConfig
  effects: EffectInput[]
  /** Policy rules that hold effects (default: none). */
  rules?: PolicyRuleConfig[]
  /** Overrides of the child gate's retry settings (e.g. a small max_wait_ms). */
  retry?: Partial<RetryOptions>
  /** Run gate.recover() before submitting (a restarted process). */
  recover?: boolean
  /** A negative control the process runs under: the harness must then see a broken promise. */
  control?: ControlName
  /** relay-child.ts only: the relay's lease (default CHILD_LEASE_MS). */
  leaseMs?: number
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as ChildPlan
const control = plan.control === undefined ? undefined : controlNamed(plan.control)
const opened = await openStore(plan.store)
const ports = processPorts(control, opened, [...createTargets(planTargets(plan)).values()].map((t) => control?.target(t) ?? t))
const gate = new Gate({
  ...ports,
  policy: plan.rules ? new RulesPolicy(plan.rules) : undefined,
  retry: { maxAttempts: 3, backoffMs: 10, ...plan.retry },
})
const recovered = plan.recover ? (await gate.recover()).effects.map((e) => e.outcome ?? { effectId: e.effectId, action: e.action }) : []
const outcomes = await Promise.all(plan.effects.map((e) => gate.submit(e)))
process.stdout.write(`${JSON.stringify([...recovered, ...outcomes])}\n`)
await gate.close()
await opened.close()
