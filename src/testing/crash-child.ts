/**
 * The crash cases' child process: makes the target from its declaration (as
 * the parent does, declared.ts), submits one effect through a gate over the
 * plan's journal, and prints the outcome, unless the crash point the parent
 * armed (INTERLOCK_CRASH_AT) kills it first.
 *
 *   node crash-child.js <plan.json>
 */
import { readFileSync } from 'node:fs'
import type { EffectInput } from '../core/effect.js'
import { Gate } from '../core/gate.js'
import { openStore } from '../core/stores/open.js'
import { declaredConfig, declaredTarget, type Declaration } from './declared.js'

export interface ChildPlan {
  declaration: Declaration
  input: EffectInput
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as ChildPlan
const config = declaredConfig(plan.declaration)
const store = await openStore(config.store)
const gate = new Gate({ store, targets: [declaredTarget(plan.declaration, config)], retry: config.gate })
const outcome = await gate.submit(plan.input)
process.stdout.write(`${JSON.stringify(outcome)}\n`)
await gate.close()
await store.close()
