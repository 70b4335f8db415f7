/**
 * Signs COMMITTED receipts with the relay's key (docs/design.md, "Signed
 * statements"), as crypto/statements.ts's
 * RelayReceiptStatement over crypto/sign.ts's exact bytes, so
 * verifyStatement checks it like any other statement.
 *
 * Signing runs once per committed effect on the relay's hot path, so it uses
 * node:crypto's native Ed25519 with the same seed. Ed25519 (RFC 8032) is
 * deterministic: the signature is byte for byte the one @noble/ed25519 makes.
 */
import { createPrivateKey, sign, type KeyObject } from 'node:crypto'
import type { JsonObject } from '../canonical-json.js'
import { canonicalJson } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { parsePublicKey } from '../crypto/keys.js'
import { statementBytes } from '../crypto/sign.js'
import type { RelayReceiptStatement } from '../crypto/statements.js'
import { sha256Hex } from '../hash.js'

export interface ReceiptSigner {
  /** The `relaySignature` a COMMITTED record carries. */
  sign(effectId: string, receipt: JsonObject, at: string): JsonObject
}

export function receiptSigner(relay: string, key: KeyPair): ReceiptSigner {
  const privateKey = nodeKey(key)
  return {
    sign(effectId, receipt, at) {
      const statement: RelayReceiptStatement = { kind: 'receipt', effectId, receiptDigest: sha256Hex(canonicalJson(receipt)), relay, at }
      const signature = sign(null, statementBytes(statement), privateKey).toString('base64url')
      return { relay, publicKey: key.publicKey, signature, statement: statement as unknown as JsonObject }
    },
  }
}

function nodeKey(key: KeyPair): KeyObject {
  const x = parsePublicKey(key.publicKey)
  if (!x) throw new Error(`relay key ${key.name} has a malformed public key`)
  return createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(key.seed).toString('base64url'), x: Buffer.from(x).toString('base64url') },
    format: 'jwk',
  })
}
