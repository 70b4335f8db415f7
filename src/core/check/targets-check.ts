/**
 * The targets family: for each [targets.<name>], three rows.
 * - `targets.<name>.credentials`: present (every `${VAR}` set) and, when the
 *   probe could tell, accepted by the service;
 * - `targets.<name>.reachable`: the target's read-only probe (probe() on the
 *   target port, implemented in each target's folder) answered and found
 *   what the target needs;
 * - `targets.<name>.tier`: the declared tier is one the target can honour;
 * - `targets.<name>.notary`, for a target with `notary = "<url>"`: the notary
 *   answers /healthz and trusts the agent's key (notary/probe.ts);
 * - for an http target, `targets.<name>.actions.<action>.request` (or
 *   `.request` without actions): the request a sample call would send, its
 *   secrets masked, from the config alone (targets/http/sample.ts).
 * Targets are probed concurrently, each under its own timeout, and closed.
 */
import type { TargetConfig } from '../config/types.js'
import { ConfigError, InterlockError } from '../errors.js'
import { createTarget } from '../targets/registry.js'
import { sampleRows } from '../targets/http/sample.js'
import { notaryRow, notaryOptionsFor } from './notary-check.js'
import type { EffectTarget, ProbeResult } from '../targets/target.js'
import { fail, pass, warn } from './rows.js'
import { credentialKeys, declaredTier, tierFact } from './target-facts.js'
import { ProbeTimeout, withTimeout } from './timeout.js'
import type { CheckContext, CheckModule, CheckRow } from './types.js'

export const targetsCheck: CheckModule = {
  family: 'targets',
  async run(ctx: CheckContext): Promise<CheckRow[]> {
    const names = Object.keys(ctx.config.targets).sort()
    const rows = await Promise.all(names.map((name) => checkTarget(name, ctx.config.targets[name]!, ctx)))
    return rows.flat()
  },
}

async function checkTarget(name: string, config: TargetConfig, ctx: CheckContext): Promise<CheckRow[]> {
  const id = (what: string) => `targets.${name}.${what}`
  const CRED = 'credentials present and accepted'
  const REACH = 'reachable through a read-only probe'
  const declared = declaredTier(config)
  const TIER = typeof declared === 'number' ? `declared tier ${declared} can be honoured` : declared === 'module' ? 'the module\'s tier can be honoured' : 'each tool\'s tier can be honoured'

  const keys = credentialKeys(config, ctx.config.secrets)
  const unset = [...ctx.unset].filter(([path]) => path.startsWith(`targets.${name}.`))
  if (unset.length > 0) {
    return [
      fail(id('credentials'), CRED, unset.map(([path, v]) => `${path}: environment variable ${v} is not set`).join('; '), `Export ${unset.map(([, v]) => v).join(', ')} in the environment check runs in.`),
    ]
  }

  let target: EffectTarget
  try {
    target = createTarget(name, config, { secrets: ctx.config.secrets, ...notaryOptionsFor(config, ctx) })
  } catch (e) {
    const hint = e instanceof InterlockError && e.hint ? e.hint : 'Fix the target in interlock.toml.'
    // A module that cannot be loaded or made is a mistake in the file (exit 3), said by its own problems.
    if (config.type === 'module' && e instanceof ConfigError) return [fail(id('module'), 'the module loads and makes a target', e.problems.join('; ') || e.message, hint)]
    return [fail(id('tier'), TIER, (e as Error).message, hint)]
  }

  let probed: ProbeResult | undefined
  let reachRow: CheckRow
  try {
    if (!target.probe) {
      reachRow = warn(id('reachable'), REACH, `target type ${config.type} has no read-only probe`, 'It is checked at first use instead.')
    } else {
      const probe = target.probe.bind(target)
      probed = await withTimeout(ctx.timeoutMs, (signal) => probe(signal))
      reachRow = probed.credentialRefused
        ? pass(id('reachable'), REACH, 'the service answered (and refused the credential)')
        : probed.ok
          ? probed.warn
            ? warn(id('reachable'), REACH, probed.detail, probed.fix)
            : pass(id('reachable'), REACH, probed.detail)
          : fail(id('reachable'), REACH, probed.detail, probed.fix ?? 'Fix the target in interlock.toml.')
    }
  } catch (e) {
    const timedOut = e instanceof ProbeTimeout
    const hint = e instanceof InterlockError && e.hint ? e.hint : undefined
    reachRow = fail(
      id('reachable'),
      REACH,
      `target ${name}: ${timedOut ? (e as Error).message : (e as Error).message.replace(new RegExp(`^target ${name}: `), '')}`,
      hint ?? target.unreachableHint ?? 'Check the address (base_url, endpoint, url) and that the service is reachable from here (DNS, firewall, proxy).',
    )
  } finally {
    await target.close?.().catch(() => {})
  }

  const credRow =
    keys.length === 0
      ? pass(id('credentials'), CRED, `target type ${config.type} needs none`)
      : probed?.credentialRefused
        ? fail(id('credentials'), CRED, probed.detail, probed.fix ?? 'Check the credential.')
        : pass(id('credentials'), CRED, `${keys.join(', ')} set${probed?.ok ? ' and accepted' : ''}`)

  // Rows of what the target is made of (an MCP server's tools; an http target's requests, from its config alone), each under the target's id.
  const samples = config.type === 'http' ? sampleRows(name, config, ctx.config.secrets) : []
  const more = [...(probed?.rows ?? []), ...samples].map((r) => (r.status === 'pass' ? pass(id(r.id), r.name, r.detail) : r.status === 'warn' ? warn(id(r.id), r.name, r.detail, r.fix) : fail(id(r.id), r.name, r.detail, r.fix ?? 'Fix the target in interlock.toml.')))
  const notary = config.type === 'http' && config.notary ? [await notaryRow(name, config, ctx)] : []
  return [credRow, reachRow, tierRow(id('tier'), TIER, config, probed, target.tier), ...notary, ...more]
}

function tierRow(id: string, name: string, config: TargetConfig, probed: ProbeResult | undefined, tier: number): CheckRow {
  const fact = tierFact(config)
  if (config.type === 'module' && !probed?.tier) {
    return warn(id, name, `tier ${tier}, as the module declares; its probe did not say whether the service honours it`, 'Prove it with the contract kit (agent-interlock/testing, docs/targets.md "Testing your own target") against the service or a faithful copy of it.')
  }
  if (fact.status !== 'probe') {
    if (fact.status === 'pass') return pass(id, name, fact.detail)
    return fact.status === 'warn' ? warn(id, name, fact.detail, fact.fix) : fail(id, name, fact.detail, fact.fix ?? '')
  }
  if (probed?.tier) {
    return probed.tier.ok ? pass(id, name, probed.tier.detail) : fail(id, name, probed.tier.detail, probed.tier.fix ?? `Declare tier 3, or make the target able to honour tier ${declaredTier(config)}.`)
  }
  return warn(id, name, `${fact.detail}; not verified, since the probe did not get that far`, 'Fix the failures above and run the check again.')
}
