/**
 * The one place @noble/ed25519 is configured: its synchronous API needs a
 * SHA-512, which node:crypto provides (no extra dependency on the hot path).
 * Verification follows RFC 8032 strictly (zip215: false): a signature the RFC
 * rejects is rejected here, whatever other libraries tolerate.
 */
import { createHash } from 'node:crypto'
import * as ed from '@noble/ed25519'

ed.hashes.sha512 = (message: Uint8Array) => new Uint8Array(createHash('sha512').update(message).digest())

export function publicKeyOf(seed: Uint8Array): Uint8Array {
  return ed.getPublicKey(seed)
}

export function randomSeed(): Uint8Array {
  return ed.utils.randomSecretKey()
}

export function signBytes(message: Uint8Array, seed: Uint8Array): Uint8Array {
  return ed.sign(message, seed)
}

/** False for any malformed signature, key or point: a bad signature is an answer, not an error. */
export function verifyBytes(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed.verify(signature, message, publicKey, { zip215: false })
  } catch {
    return false
  }
}
