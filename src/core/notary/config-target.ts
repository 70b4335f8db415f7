/**
 * A `notary = "<url>"` key on a target in interlock.toml: the registry wraps
 * that target with notarized(), so the inline gate, the relay and
 * reconcile-effects all send and recover it through the notary. An effect
 * journaled through the notary and recovered with the bare tier-3 target
 * would go AMBIGUOUS while the notary holds its answer.
 *
 * The agent writes as its relay key, under that key's name: the name
 * [notary.agents] trusts it by on the notary's side.
 */
import type { HttpTargetConfig } from '../config/types.js'
import type { KeyPair } from '../crypto/keys.js'
import { ConfigError } from '../errors.js'
import { JournalSecrets } from '../secrets/journal-secrets.js'
import type { EffectTarget } from '../targets/target.js'
import { notaryClient } from './client.js'
import { notarized } from './notarized.js'

export interface NotaryTargetOptions {
  /** The key the agent signs intend and abort with (the [relay] key); undefined when the config has none. */
  key?: KeyPair
  /** [notary.services] of the same file: the default for notary_services. */
  services?: Readonly<Record<string, string>>
  timeoutMs?: number
  /** The `${VAR}` values the journal is scrubbed of (registry.ts): the notary's URL is journaled as scrubbed. */
  secrets?: readonly string[]
}

/** What the notary needs to be reached and believed, or a ConfigError naming the missing key. */
export function notaryAgentSettings(name: string, config: HttpTargetConfig, opts: NotaryTargetOptions = {}) {
  const url = config.notary!
  if (!opts.key) {
    throw new ConfigError(`target ${name} has notary = ${JSON.stringify(url)} but no agent key to sign its intend and abort records with`, [`targets.${name}.notary: needs [relay] key`], {
      hint: 'Set [relay] key to the relay key file (`interlock relay keygen --name <agent>`), and trust its public key under that name in the notary\'s [notary.agents].',
      context: { target: name, notary: url },
    })
  }
  const services = config.notaryServices ?? opts.services ?? {}
  if (Object.keys(services).length === 0) {
    throw new ConfigError(`target ${name} has notary = ${JSON.stringify(url)} but trusts no service's records there`, [`targets.${name}.notary_services: required (or [notary.services])`], {
      hint: `Add [targets.${name}.notary_services] with <service> = "<public key>" (from \`interlock notary keygen\`): the notary's answers are believed only when the service signed them.`,
      context: { target: name, notary: url },
    })
  }
  return { url, key: opts.key, writer: opts.key.name, services }
}

export function notarizeFromConfig(name: string, config: HttpTargetConfig, inner: EffectTarget, opts: NotaryTargetOptions = {}): EffectTarget {
  const s = notaryAgentSettings(name, config, opts)
  const client = notaryClient({ url: s.url, writer: s.writer, key: s.key, timeoutMs: opts.timeoutMs })
  // Journaled as the redacting store will write it: a URL read from a ${VAR} is a secret of the file.
  const journaledAs = new JournalSecrets(opts.secrets ?? []).scrub(client.url)
  // A late request's claim that beats recovery's abort is waited on as long as a request to this service may take (docs/notary.md).
  return notarized(inner, { notary: client, services: s.services, journaledAs, claimWaitMs: config.timeoutMs })
}
