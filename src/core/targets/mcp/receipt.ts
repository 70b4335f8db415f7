/**
 * A COMMITTED tool call's receipt: the server's own CallToolResult, so that
 * the same call asked again (a retry, a restarted host replaying its
 * conversation) gets the same answer from the journal without calling the
 * server again. A result larger than max_result_bytes (as canonical JSON) is
 * journaled as its size and digest only; whoever asks again is told the call
 * was made and its result was not kept.
 */
import { canonicalJson, type JsonObject } from '../../canonical-json.js'
import type { Receipt } from '../../effect.js'
import { sha256Hex } from '../../hash.js'

export function receiptOf(result: JsonObject, maxBytes: number): Receipt {
  const text = canonicalJson(result)
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes <= maxBytes) return { result }
  return { result_bytes: bytes, result_sha256: sha256Hex(text), truncated: true }
}

/** The CallToolResult a receipt stands for. */
export function resultOf(receipt: Receipt, effectId: string): JsonObject {
  if (receipt.result !== null && typeof receipt.result === 'object' && !Array.isArray(receipt.result)) return receipt.result
  const bytes = typeof receipt.result_bytes === 'number' ? `${receipt.result_bytes} bytes` : 'its size unknown'
  return {
    content: [{ type: 'text', text: `This call was made (effect ${effectId}, COMMITTED); its result (${bytes}) was larger than max_result_bytes and was not kept.` }],
  }
}
