/**
 * Ed25519 through node:crypto (OpenSSL's native code), for the hot paths: a
 * relay signs every journal record it writes, and `outbox verify` checks
 * every one of them. @noble/ed25519 (ed25519.ts) takes about 0.35 ms to sign
 * and 1.5 ms to verify here; this takes tens of microseconds.
 *
 * Ed25519 (RFC 8032) is deterministic: a signature made here is byte for byte
 * the one @noble/ed25519 makes from the same seed, so either side can check
 * the other's. OpenSSL's verification refuses a non-canonical S as the RFC
 * requires; it is used only against keys the verifier already trusts, so the
 * small-order-key cases the stricter @noble check also refuses cannot arise.
 */
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { fromBase64Url } from './encoding.js'
import { parsePublicKey, type KeyPair } from './keys.js'

/** Signs messages with this key pair; returns base64url signatures. */
export function nativeSigner(key: KeyPair): (message: Uint8Array) => string {
  const x = parsePublicKey(key.publicKey)
  if (!x) throw new Error(`key ${key.name} has a malformed public key`)
  const privateKey = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(key.seed).toString('base64url'), x: Buffer.from(x).toString('base64url') },
    format: 'jwk',
  })
  return (message) => sign(null, message, privateKey).toString('base64url')
}

/** PKCS#8 DER of an Ed25519 private key is this prefix and the 32-byte seed (RFC 8410). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

/**
 * Signs with a bare seed (no key pair at hand); base64url signatures. Keys are
 * kept per seed, as a process signs with one or two.
 */
export function nativeSeedSigner(): (seed: Uint8Array, message: Uint8Array) => string {
  const keys = new Map<string, KeyObject>()
  return (seed, message) => {
    const id = Buffer.from(seed).toString('base64url')
    let k = keys.get(id)
    if (k === undefined) {
      k = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' })
      keys.set(id, k)
    }
    return sign(null, message, k).toString('base64url')
  }
}

/**
 * Checks base64url signatures against `ed25519:` public keys, keeping each
 * key's parsed form. False for anything malformed, never a throw.
 */
export function nativeVerifier(): (publicKey: string, message: Uint8Array, signature: string) => boolean {
  const keys = new Map<string, KeyObject | null>()
  const keyOf = (text: string): KeyObject | null => {
    let k = keys.get(text)
    if (k === undefined) {
      const raw = parsePublicKey(text)
      k = raw ? createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' }) : null
      keys.set(text, k)
    }
    return k
  }
  return (publicKey, message, signature) => {
    const k = keyOf(publicKey)
    const sig = fromBase64Url(signature)
    if (!k || !sig || sig.length !== 64) return false
    try {
      return verify(null, message, k, sig)
    } catch {
      return false
    }
  }
}
