/** The `targets.<name>.notary` row: a notarized target's notary answers and trusts this agent's key. */
import { isAbsolute, resolve, dirname } from 'node:path'
import type { HttpTargetConfig, TargetConfig } from '../config/types.js'
import type { KeyPair } from '../crypto/keys.js'
import { loadRelayKey } from '../crypto/relay-key.js'
import { probeNotary } from '../notary/probe.js'
import type { TargetOptions } from '../targets/registry.js'
import { fail, pass } from './rows.js'
import { withTimeout } from './timeout.js'
import type { CheckContext, CheckRow } from './types.js'

const NAME = 'the notary answers and trusts this agent'

/** The agent's key as a relay would load it ([relay] key, else INTERLOCK_RELAY_KEY); undefined when none can be read. */
function agentKey(ctx: CheckContext): KeyPair | undefined {
  // As keys.relay finds it: [relay] key against the config file's folder, else INTERLOCK_RELAY_KEY.
  const raw = (ctx.raw.relay as Record<string, unknown> | undefined)?.key
  const path = typeof raw === 'string' ? raw : ctx.relayKeyEnv
  if (!path) return undefined
  const file = isAbsolute(path) ? path : resolve(dirname(ctx.config.file ?? '.'), path)
  try {
    return loadRelayKey(file)
  } catch {
    return undefined // keys.relay says why
  }
}

export function notaryOptionsFor(config: TargetConfig, ctx: CheckContext): Pick<TargetOptions, 'notary'> {
  if (config.type !== 'http' || !config.notary) return {}
  return { notary: { key: agentKey(ctx), services: ctx.config.notary?.services } }
}

export async function notaryRow(name: string, config: HttpTargetConfig, ctx: CheckContext): Promise<CheckRow> {
  const id = `targets.${name}.notary`
  const key = agentKey(ctx)
  if (!key) return fail(id, NAME, `no readable relay key to sign with ([relay] key or INTERLOCK_RELAY_KEY)`, 'Set [relay] key to the agent\'s relay key (`interlock relay keygen`); see keys.relay.')
  try {
    const probed = await withTimeout(ctx.timeoutMs, (signal) => probeNotary(config.notary!, key, signal))
    return probed.ok ? pass(id, NAME, probed.detail) : fail(id, NAME, probed.detail, probed.fix ?? 'Check the notary.')
  } catch (e) {
    return fail(id, NAME, (e as Error).message, 'Check that `interlock notary serve` runs at the target\'s notary URL.')
  }
}
