/**
 * The key that signs what `outbox verify` later trusts (an anchor, a
 * checkpoint): an operator key declared in [[operators]], or a relay key that
 * verify trusts (the [relay] key's, or one given with --relay-key). Refused
 * before anything is read when verify would not believe its signature.
 */
import { Flags } from '@oclif/core'
import type { InterlockConfig } from '../core/config/types.js'
import { loadPrivateKey, type KeyPair } from '../core/crypto/keys.js'
import { ConfigError, UsageError } from '../core/errors.js'
import { assertTrusted } from '../core/outbox/operator-context.js'
import { trustedRelayKeys, type RelayKey } from '../core/outbox/relay-keys.js'
import { OPERATOR_KEY_ENV, passphraseFrom } from './operator-key.js'

/** --key, --passphrase-env and --relay-key; `signs` says what the key signs, for --key's help. */
export function signingKeyFlags(signs: string) {
  return {
    key: Flags.string({ env: OPERATOR_KEY_ENV, helpValue: '<file>', description: `Operator or relay key file to sign ${signs}, or set ${OPERATOR_KEY_ENV}.` }),
    'passphrase-env': Flags.string({ helpValue: '<VAR>', description: "Name of the environment variable holding the key file's passphrase, when it is encrypted." }),
    'relay-key': Flags.string({
      multiple: true,
      helpValue: '<name>=<public key>',
      description: "A relay's public key to trust for its signatures (repeatable), besides the [relay] key file's.",
    }),
  }
}

/** Loads --key and checks verify will trust it; returns it with the relay keys verify trusts. */
export function trustedSigningKey(
  config: Pick<InterlockConfig, 'operators' | 'relay'>,
  flags: { key?: string; 'passphrase-env'?: string; 'relay-key'?: string[] },
  what: 'anchor' | 'checkpoint',
): { key: KeyPair; relays: RelayKey[] } {
  if (!flags.key) throw new UsageError(`no key to sign the ${what} with`, { hint: `Pass --key <file> (an operator key, or the relay key) or set ${OPERATOR_KEY_ENV}.` })
  const key = loadPrivateKey(flags.key, { passphrase: passphraseFrom(flags['passphrase-env'], process.env) })
  const relays = trustedRelayKeys(config.relay, flags['relay-key'] ?? [])
  if (key.kind === 'operator') assertTrusted({ operators: config.operators, key })
  else if (!relays.some((k) => k.publicKey === key.publicKey)) {
    throw new ConfigError(`relay key ${key.name} is not a trusted relay key here, so verify would not trust ${what === 'anchor' ? 'an anchor' : 'a checkpoint'} it signs`, [], {
      hint: `Point [relay] key at it, or pass --relay-key ${key.name}=${key.publicKey}.`,
    })
  }
  return { key, relays }
}
