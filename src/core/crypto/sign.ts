/**
 * Signing and verifying statements: ed25519 (RFC 8032) over
 * domainPrefix(kind) + canonicalJson(statement), so the same statement signs
 * the same bytes whoever serialises it, and a statement of one kind can never
 * pass for another.
 */
import { randomBytes } from 'node:crypto'
import { canonicalJson } from '../canonical-json.js'
import { signBytes, verifyBytes } from './ed25519.js'
import { fromBase64Url, toBase64Url } from './encoding.js'
import { parsePublicKey } from './keys.js'
import { domainPrefix, type Signed, type Statement } from './statements.js'

export function statementBytes(statement: Statement): Uint8Array {
  return new TextEncoder().encode(domainPrefix(statement.kind) + canonicalJson(statement))
}

/** @param seed the signer's 32-byte secret seed (KeyPair.seed) */
export function signStatement<S extends Statement>(statement: S, seed: Uint8Array): Signed<S> {
  return { statement, signature: toBase64Url(signBytes(statementBytes(statement), seed)) }
}

/**
 * True only for a well-formed signature by `publicKey` (`ed25519:<base64url>`)
 * over exactly this statement; false for anything else, never a throw.
 */
export function verifyStatement(statement: Statement, signature: string, publicKey: string): boolean {
  const key = parsePublicKey(publicKey)
  const sig = fromBase64Url(signature)
  if (!key || !sig || sig.length !== 64) return false
  let message: Uint8Array
  try {
    message = statementBytes(statement)
  } catch {
    return false
  }
  return verifyBytes(sig, message, key)
}

export function verifySigned(s: Signed, publicKey: string): boolean {
  return verifyStatement(s.statement, s.signature, publicKey)
}

/** A fresh 128-bit nonce, base64url. */
export function newNonce(): string {
  return toBase64Url(new Uint8Array(randomBytes(16)))
}
