/**
 * What the schema's batched write functions, append() (append.ts) and
 * propose() (propose.ts), answer: one row per request, in the order sent,
 * saying whether it was written and, if so, where its record went. The
 * request itself says what the record holds, so the record is put together
 * on this side from both.
 */
import { StoreError } from '../../errors.js'
import type { JournalRecord } from '../store.js'

export interface BatchAnswerRow {
  /** The request's place in the batch, from 1. */
  idx: number
  ok: boolean
  journal: string | null
  seq: string | null
  prev_hash: string | null
  hash: string | null
}

/**
 * Refuses an answer that is not one row per request in the order sent: this
 * side and the schema's function disagree, and no result can be trusted.
 * @param fn the function's name; @param noun what one request is called in the message
 */
export function assertAnsweredInOrder(fn: string, noun: string, rows: readonly BatchAnswerRow[], count: number): void {
  if (rows.length !== count) throw new StoreError(`the ${fn} function answered ${rows.length} row(s) for ${count} ${noun}(s)`)
  for (const [i, row] of rows.entries()) {
    if (row.idx !== i + 1) throw new StoreError(`the ${fn} function answered ${noun} ${row.idx} in place ${i + 1}`)
  }
}

/** The record a written row stands for: the row says where it went, the request what it holds. */
export function writtenRecord(row: BatchAnswerRow, written: Pick<JournalRecord, 'effectId' | 'state' | 'at' | 'data'>): JournalRecord {
  return {
    journal: row.journal!,
    seq: Number(row.seq),
    effectId: written.effectId,
    state: written.state,
    at: written.at,
    data: written.data,
    prevHash: row.prev_hash!,
    hash: row.hash!,
  }
}
