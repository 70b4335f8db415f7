/**
 * How relays signed before seals (crypto/seal.ts), kept so journals in that
 * form can still be written by tests and checked by `outbox verify`: every
 * record (crypto/record-signature.ts),
 * and, on a COMMITTED record, the receipt too (receipt-signer.ts), inside the
 * data the record signature covers. The receipt statement is kept beside the
 * record signature so journals and tools that know only receipts still read
 * them as before.
 */
import type { JsonObject } from '../canonical-json.js'
import type { KeyPair } from '../crypto/keys.js'
import { recordSigner, type RecordSigner } from '../crypto/record-signature.js'
import { receiptSigner } from './receipt-signer.js'

export function relaySigner(relay: string, key: KeyPair, now: () => Date): RecordSigner {
  const records = recordSigner({ key, id: relay, role: 'relay', now })
  const receipts = receiptSigner(relay, key)
  return {
    signer: records.signer,
    role: records.role,
    sign(effectId, from, to, follows, data) {
      const withReceipt =
        to === 'COMMITTED' ? { ...data, relaySignature: receipts.sign(effectId, (data.receipt ?? {}) as JsonObject, now().toISOString()) } : data
      return records.sign(effectId, from, to, follows, withReceipt)
    },
  }
}
