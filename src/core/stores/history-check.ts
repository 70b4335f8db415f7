/**
 * Verifies one effect's history without reading its whole journal: each
 * record is checked against its own hash and linked to the record just before
 * it in the journal (read alongside, whatever effect that one belongs to); the
 * states must follow the lifecycle from PROPOSED; and the last record must be
 * the one the effects table points to.
 */
import { IllegalTransitionError } from '../errors.js'
import { canTransition, isState } from '../lifecycle.js'
import { ChainVerifier } from './record-hash.js'
import { integrity } from './record-data.js'
import { GENESIS_HASH, type JournalRecord } from './store.js'

export interface HistoryRow {
  record: JournalRecord
  /** The stored canonical text of `record.data`. */
  dataText: string
  /** Hash of the record at seq - 1 in the same journal; null when there is none. */
  predecessorHash: string | null
}

/** @param last the effect's journal and last record according to the effects table (undefined: no such effect) */
export function verifyHistory(effectId: string, rows: readonly HistoryRow[], last: { journal: string; seq: number } | undefined): JournalRecord[] {
  const verifier = new ChainVerifier()
  let state: string | null = null
  for (const { record: r, dataText, predecessorHash } of rows) {
    if (!isState(r.state)) throw integrity(r.journal, r.seq, `has an unknown state ${JSON.stringify(r.state)}`)
    const before = r.seq === 1 ? GENESIS_HASH : predecessorHash
    if (before === null) throw integrity(r.journal, r.seq, `follows record ${r.seq - 1}, which is missing`)
    verifier.resume(r.journal, r.seq - 1, before)
    verifier.check(r, dataText)
    if (!canTransition(state as JournalRecord['state'] | null, r.state)) {
      const why = new IllegalTransitionError(state, r.state, effectId).message
      throw integrity(r.journal, r.seq, `records an ${why}`)
    }
    state = r.state
  }
  const tail = rows.at(-1)?.record
  if (last ? tail?.seq !== last.seq || tail.journal !== last.journal : tail !== undefined) {
    const where = last ?? tail!
    throw integrity(where.journal, where.seq, last
      ? `is effect ${effectId}'s last record according to the effects table, but its history ends at ${tail ? `record ${tail.seq}` : 'nothing'}`
      : `belongs to effect ${effectId}, which the effects table does not know`)
  }
  return rows.map((row) => row.record)
}
