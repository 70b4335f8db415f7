/**
 * A worker for the relay-mode crash tests: journals the plan's effects
 * through the outbox, runs a relay until they settle, and prints the
 * outcomes, unless the crash point the parent armed kills it first. The
 * relay runs under the plan's negative control (controls.ts), if it names one.
 */
import { readFileSync } from 'node:fs'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { Relay } from '../../src/core/relay/relay.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { controlNamed, processPorts } from './controls.js'
import { planTargets } from './plan-targets.js'
import type { ChildPlan } from './submit-child.js'

/** Short: the relay that recovers after the kill waits for this lease to run out. */
export const CHILD_LEASE_MS = 700

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as ChildPlan
const control = plan.control === undefined ? undefined : controlNamed(plan.control)
const store = await openStore(plan.store)
const targets = [...createTargets(planTargets(plan)).values()].map((t) => control?.target(t) ?? t)
const outbox = new Outbox({ store, targets, pollMs: 20 })
const handles = await Promise.all(plan.effects.map((e) => outbox.submit(e)))
const ports = processPorts(control, store, targets)
const relay = new Relay({ ...ports, relayId: 'crash-relay', key: generateKeyPair('relay', 'crash-relay'), policy: new RulesPolicy(plan.rules ?? []), leaseMs: plan.leaseMs ?? CHILD_LEASE_MS, pollMs: 20, retry: { maxAttempts: 3, backoffMs: 10, ...plan.retry } })
await relay.start()
const outcomes = await Promise.all(handles.map((h) => h.result()))
process.stdout.write(`${JSON.stringify(outcomes)}\n`)
await relay.stop()
await outbox.close()
await store.close()
