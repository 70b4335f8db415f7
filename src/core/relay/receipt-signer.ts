/**
 * Signs COMMITTED receipts with the relay's key (docs/design.md, "Signed
 * statements"), as crypto/statements.ts's
 * RelayReceiptStatement over crypto/sign.ts's exact bytes, so
 * verifyStatement checks it like any other statement.
 *
 * Signing runs once per committed effect on the relay's hot path, so it uses
 * node:crypto's native Ed25519 (crypto/native-ed25519.ts) with the same seed.
 */
import type { JsonObject } from '../canonical-json.js'
import { canonicalJson } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { nativeSigner } from '../crypto/native-ed25519.js'
import { statementBytes } from '../crypto/sign.js'
import type { RelayReceiptStatement } from '../crypto/statements.js'
import { sha256Hex } from '../hash.js'

export interface ReceiptSigner {
  /** The `relaySignature` a COMMITTED record carries. */
  sign(effectId: string, receipt: JsonObject, at: string): JsonObject
}

export function receiptSigner(relay: string, key: KeyPair): ReceiptSigner {
  const sign = nativeSigner(key)
  return {
    sign(effectId, receipt, at) {
      const statement: RelayReceiptStatement = { kind: 'receipt', effectId, receiptDigest: sha256Hex(canonicalJson(receipt)), relay, at }
      return { relay, publicKey: key.publicKey, signature: sign(statementBytes(statement)), statement: statement as unknown as JsonObject }
    },
  }
}
