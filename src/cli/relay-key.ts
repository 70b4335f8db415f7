/** The relay's private key file, as `interlock relay` and `reconcile-effects` load it to sign what they journal. */
import { loadPrivateKey, type KeyPair } from '../core/crypto/keys.js'
import { ConfigError } from '../core/errors.js'

export function loadRelayKey(file: string): KeyPair {
  const key = loadPrivateKey(file)
  if (key.kind !== 'relay') {
    throw new ConfigError(`key file ${file} holds an ${key.kind} key, not a relay key`, [], { hint: 'Make a relay key with `interlock relay keygen`.' })
  }
  return key
}
