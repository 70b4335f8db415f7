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
  return hashOf(r, typeof r.data === 'string' ? r.data : canonicalJson(r.data))
}

// The one place the formula lives; takes the data as text so the verifier's hot path allocates nothing else.
function hashOf(r: Omit<JournalRecord, 'hash' | 'data'>, dataText: string): string {
  return sha256Hex(`${r.journal}\n${r.seq}\n${r.effectId}\n${r.state}\n${r.at}\n${dataText}\n${r.prevHash}`)
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
    // Hot path (recovery checks every record): nothing here allocates unless a check fails.
    const head = this.heads.get(r.journal)
    const seq = head ? head.seq : 0
    if (r.seq !== seq + 1) {
      throw new IntegrityError(`${where(r)}: expected record ${seq + 1} next; a record is missing, inserted or out of order`, {
        context: { journal: r.journal, seq: r.seq, expectedSeq: seq + 1 },
      })
    }
    if (r.prevHash !== (head ? head.hash : GENESIS_HASH)) {
      throw new IntegrityError(`${where(r)}: its previous-hash does not match record ${seq}; the chain is broken there`, {
        context: { journal: r.journal, seq: r.seq },
      })
    }
    if (hashOf(r, dataText ?? canonicalJson(r.data)) !== r.hash) {
      throw new IntegrityError(`${where(r)}: its content does not match its hash; the record was altered`, {
        context: { journal: r.journal, seq: r.seq },
      })
    }
    if (head) {
      head.seq = r.seq
      head.hash = r.hash
    } else {
      this.heads.set(r.journal, { seq: r.seq, hash: r.hash })
    }
  }
}

function where(r: JournalRecord): string {
  return `journal ${JSON.stringify(r.journal)} record ${r.seq} (effect ${r.effectId}, ${r.state})`
}
