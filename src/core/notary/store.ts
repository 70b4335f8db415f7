/**
 * The notary's store port: one hash-chained list of records per effect, and
 * one decision row per (effect, attempt) that a claim or an abort inserts.
 * The first insert wins (docs/notary.md, "The one rule"); the store makes the
 * chain-head check and both inserts one atomic step, so two writers racing on
 * one effect never both append after the same head, and never both decide.
 */
import type { StoredRecord } from './records.js'

export type AppendResult =
  | 'appended'
  /** The chain moved on since the writer read its head: nothing written. */
  | 'stale'
  /** A claim or abort for an attempt already decided: nothing written. */
  | 'decided'

export interface NotaryStore {
  /** The effect's chain, oldest first (empty when the notary never heard of it). */
  chain(effect: string): Promise<StoredRecord[]>
  /**
   * Appends `record` (seq = head's + 1) when the chain's last hash is still
   * `record.prev`; a claim or abort also inserts the attempt's decision row,
   * and writes nothing when one exists.
   */
  append(record: StoredRecord): Promise<AppendResult>
  /** Every effect the log holds a record or a decision for, in id order (for `notary verify`). */
  effects(): Promise<string[]>
  /** The effect's decision rows, by attempt (for `notary verify`: each must match its claim or abort). */
  decisions(effect: string): Promise<DecisionRow[]>
  close(): Promise<void>
}

/** The row a claim or abort inserts: who decided attempt `attempt`, with which record. */
export interface DecisionRow {
  effect: string
  attempt: number
  decision: 'claim' | 'abort'
  writer: string
  seq: number
}

export function isDecision(kind: string): kind is 'claim' | 'abort' {
  return kind === 'claim' || kind === 'abort'
}

/** A record as both stores keep it: its body as JSON text. */
export interface RecordRow {
  effect: string
  seq: number
  attempt: number
  kind: StoredRecord['kind']
  writer: string
  at: string
  body: string
  prev: string
  signature: string
  hash: string
}

export function recordOf(row: RecordRow): StoredRecord {
  return { ...row, body: JSON.parse(row.body) as StoredRecord['body'] }
}
