/**
 * The relay public keys `outbox verify` checks receipts against: the public
 * half of the `[relay]` key file in interlock.toml (the key `interlock relay`
 * signs with), named by `[relay] id` when set, else by the key's own name;
 * and every `--relay-key name=ed25519:…` given. interlock.toml has no list of
 * relay public keys of its own; a fleet whose relays sign with several keys
 * passes the others with --relay-key.
 *
 * Only the public key is read (key files keep it in clear beside the seed),
 * so no passphrase is needed and the seed is never decrypted. A configured
 * key file that cannot be read is an error naming it, not a silent "no
 * keys": the config says receipts are to be checked.
 */
import { readFileSync } from 'node:fs'
import type { RelayConfig } from '../config/types.js'
import { parseKeyFile, parsePublicKey } from '../crypto/keys.js'
import { ConfigError, UsageError } from '../errors.js'
import type { TrustedKey } from './verify.js'

export interface RelayKey extends TrustedKey {
  /** Where it came from: the key file's path, or "--relay-key". */
  from: string
}

export function trustedRelayKeys(relay: Pick<RelayConfig, 'id' | 'key'> | undefined, given: readonly string[]): RelayKey[] {
  const keys: RelayKey[] = []
  if (relay?.key) keys.push(fromKeyFile(relay.key, relay.id))
  for (const text of given) {
    const at = text.indexOf('=')
    const [name, publicKey] = [text.slice(0, Math.max(0, at)), text.slice(at + 1)]
    if (at <= 0 || !parsePublicKey(publicKey)) {
      throw new UsageError(`--relay-key ${text} is not <name>=ed25519:<base64url>`, { hint: 'Copy the "Public key" `interlock relay keygen` printed, e.g. --relay-key relay-1=ed25519:Qm…' })
    }
    keys.push({ name, publicKey, from: '--relay-key' })
  }
  return keys
}

function fromKeyFile(path: string, id: string | undefined): RelayKey {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (cause) {
    throw new ConfigError(`[relay] key ${path} cannot be read to check relay receipts: ${(cause as Error).message}`, [], {
      hint: 'verify reads only its public key: run where the file is readable, or remove [relay] key from this interlock.toml and pass --relay-key <name>=<public key>.',
      context: { path },
      cause,
    })
  }
  const file = parseKeyFile(text, path)
  if (file.kind !== 'relay') {
    throw new ConfigError(`[relay] key ${path} holds an ${file.kind} key, not a relay key`, [], { hint: 'Point [relay] key at a key made with `interlock relay keygen`.', context: { path } })
  }
  return { name: id ?? file.name, publicKey: file.publicKey, from: path }
}
