/**
 * The demo's worker process: the scripted agent's executor. It opens the
 * journal, builds the targets from the same config as the parent, submits
 * every effect at once and prints each outcome as a JSON line on stdout.
 * The parent arms a crash point in pause mode through the environment and
 * kills this process with SIGKILL once its effects are in flight.
 *
 *   node worker.js <plan.json>
 */
import { readFileSync } from 'node:fs'
import type { TargetConfig } from '../config/types.js'
import type { EffectInput } from '../effect.js'
import { Gate } from '../gate.js'
import { openStore } from '../stores/open.js'
import { demoTargets, type DemoNotary } from './targets.js'

export interface WorkerPlan {
  journal: string
  targets: Record<string, TargetConfig>
  effects: (EffectInput & { label: string })[]
  /** Targets behind the notary, and how to reach it. */
  notary?: DemoNotary
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as WorkerPlan
const store = await openStore({ kind: 'sqlite', path: plan.journal })
const gate = new Gate({ store, targets: demoTargets(plan.targets, plan.notary), retry: { maxAttempts: 5, backoffMs: 50 } })
await Promise.all(
  plan.effects.map(async ({ label, ...effect }) => {
    const outcome = await gate.submit(effect)
    process.stdout.write(`${JSON.stringify({ label, outcome })}\n`)
  }),
)
await gate.close()
await store.close()
