/**
 * The relay's private key, as `interlock relay`, `reconcile-effects` and a
 * gate built from interlock.toml load it to sign what they journal.
 *
 * Where it is, is configuration ([relay] key, --key or INTERLOCK_RELAY_KEY), so
 * every way it cannot be used is a config/key error (exit 3) with the relay's
 * hint, not an operator's "not found" (exit 7): a relay has no one to type
 * another path or a passphrase.
 */
import { ConfigError, InterlockError } from '../errors.js'
import { loadPrivateKey, type KeyPair } from './keys.js'

const MAKE_ONE = 'Make the relay\'s key with `interlock relay keygen --name <relay> --out <file>` (unencrypted: a relay asks nobody for a passphrase) and point [relay] key, --key or INTERLOCK_RELAY_KEY at it.'

/** `from` says where the path came from, for the message: "[relay] key", "--key". */
export function loadRelayKey(file: string, from = '[relay] key'): KeyPair {
  let key: KeyPair
  try {
    key = loadPrivateKey(file)
  } catch (error) {
    if (error instanceof InterlockError && error.code === 'E_KEY_NOT_FOUND') {
      throw new ConfigError(`the relay key ${file} (${from}) cannot be read: ${(error.cause as Error | undefined)?.message ?? error.message}`, [], {
        hint: MAKE_ONE,
        context: { path: file, from },
        cause: error,
      })
    }
    if (error instanceof InterlockError && error.code === 'E_KEY_PASSPHRASE') {
      throw new ConfigError(`the relay key ${file} (${from}) is encrypted, and a relay has no passphrase to give`, [], {
        hint: MAKE_ONE,
        context: { path: file, from },
        cause: error,
      })
    }
    throw error
  }
  if (key.kind !== 'relay') {
    throw new ConfigError(`the relay key ${file} (${from}) holds an ${key.kind} key, not a relay key`, [], { hint: MAKE_ONE, context: { path: file, from } })
  }
  return key
}
