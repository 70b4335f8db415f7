/**
 * A worker process for the notary's crash tests: submits the plan's effects
 * through a gate whose one target is notarized (or not, when the plan has no
 * notary), with whatever crash point the parent armed in the environment.
 */
import { readFileSync } from 'node:fs'
import type { StoreConfig, TargetConfig } from '../../src/core/config/types.js'
import { fromBase64Url } from '../../src/core/crypto/encoding.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import type { EffectInput } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { notaryClient } from '../../src/core/notary/client.js'
import { notarized } from '../../src/core/notary/notarized.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTarget } from '../../src/core/targets/registry.js'

export interface NotaryChildPlan {
  store: StoreConfig
  name: string
  target: TargetConfig
  /** Absent: the plain tier-3 target. */
  notary?: { url: string; agent: string; seed: string; services: Record<string, string> }
  effects: EffectInput[]
  /** Sign the journal's records as the agent's relay key, as a gate built from interlock.toml with [relay] key does. */
  signAsAgent?: boolean
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as NotaryChildPlan
const inner = createTarget(plan.name, plan.target)
const n = plan.notary
const target = n ? notarized(inner, { notary: notaryClient({ url: n.url, writer: n.agent, key: { seed: fromBase64Url(n.seed)! } }), services: n.services }) : inner
const store = await openStore(plan.store)
const signing = n && plan.signAsAgent ? { key: generateKeyPair('relay', n.agent, fromBase64Url(n.seed)!) } : undefined
const gate = new Gate({ store, targets: [target], retry: { maxAttempts: 3, backoffMs: 10 }, ...(signing ? { signing } : {}) })
const outcomes = await Promise.all(plan.effects.map((e) => gate.submit(e)))
process.stdout.write(`${JSON.stringify(outcomes)}\n`)
await gate.close()
await store.close()
