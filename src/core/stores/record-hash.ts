/**
 * The hash that chains journal records. Both stores compute it here, so an
 * exported journal verifies the same whatever store wrote it.
 *
 * hash = sha256hex(journal \n seq \n effectId \n state \n at \n canonicalJson(data) \n prevHash)
 */
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import { IntegrityError } from '../errors.js'
import { sha256Hex } from '../hash.js'
import { GENESIS_HASH, type JournalRecord } from './store.js'

export function recordHash(r: Omit<JournalRecord, 'hash' | 'data'> & { data: JsonObject | string }): string {
  const data = typeof r.data === 'string' ? r.data : canonicalJson(r.data)
  return sha256Hex(`${r.journal}\n${r.seq}\n${r.effectId}\n${r.state}\n${r.at}\n${data}\n${r.prevHash}`)
}

/**
 * Verifies records of one journal in seq order, carrying the chain across
 * calls. Names the first record that does not fit.
 */
export class ChainVerifier {
  private heads = new Map<string, { seq: number; hash: string }>()

  /**
   * Continue a journal's chain after a record the caller has read but not
   * checked here: lets one effect's history be checked link by link without
   * reading its whole journal.
   */
  resume(journal: string, seq: number, hash: string): void {
    this.heads.set(journal, { seq, hash })
  }

  /** `dataText` is the stored canonical JSON text, when the caller has it (saves re-serialising). */
  check(r: JournalRecord, dataText?: string): void {
    const where = `journal ${JSON.stringify(r.journal)} record ${r.seq} (effect ${r.effectId}, ${r.state})`
    const head = this.heads.get(r.journal) ?? { seq: 0, hash: GENESIS_HASH }
    if (r.seq !== head.seq + 1) {
      throw new IntegrityError(`${where}: expected record ${head.seq + 1} next; a record is missing, inserted or out of order`, {
        context: { journal: r.journal, seq: r.seq, expectedSeq: head.seq + 1 },
      })
    }
    if (r.prevHash !== head.hash) {
      throw new IntegrityError(`${where}: its previous-hash does not match record ${head.seq}; the chain is broken there`, {
        context: { journal: r.journal, seq: r.seq },
      })
    }
    const expected = recordHash({ ...r, data: dataText ?? r.data })
    if (expected !== r.hash) {
      throw new IntegrityError(`${where}: its content does not match its hash; the record was altered`, {
        context: { journal: r.journal, seq: r.seq },
      })
    }
    this.heads.set(r.journal, { seq: r.seq, hash: r.hash })
  }
}
