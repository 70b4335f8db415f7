/**
 * The demo's targets, built the same way in the worker and in the recovering
 * process: from their config, and those the plan names behind the notary
 * wrapped in notarized() (docs/notary.md), writing as the demo's agent.
 */
import type { TargetConfig } from '../config/types.js'
import { fromBase64Url } from '../crypto/encoding.js'
import { notaryClient } from '../notary/client.js'
import { notarized } from '../notary/notarized.js'
import { createTargets } from '../targets/registry.js'
import type { EffectTarget } from '../targets/target.js'

export interface DemoNotary {
  url: string
  /** The agent's name as the notary trusts it, and its key's seed (base64url). */
  agent: string
  seed: string
  /** Service names → public keys the agent believes. */
  services: Record<string, string>
  /** The targets that sit behind the notary. */
  targets: string[]
}

export function demoTargets(configs: Record<string, TargetConfig>, notary?: DemoNotary): EffectTarget[] {
  const targets = [...createTargets(configs).values()]
  if (!notary) return targets
  const key = { seed: fromBase64Url(notary.seed)! }
  return targets.map((t) =>
    notary.targets.includes(t.name) ? notarized(t, { notary: notaryClient({ url: notary.url, writer: notary.agent, key }), services: notary.services }) : t,
  )
}
