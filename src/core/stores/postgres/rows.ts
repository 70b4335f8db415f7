/** PostgreSQL rows → the port's types. int8 arrives as a string (pg's default), json already parsed. */
import type { EffectSnapshot, Tier } from '../../effect.js'
import type { State } from '../../lifecycle.js'
import type { HistoryRow } from '../history-check.js'
import type { InFlightRow } from '../in-flight-check.js'
import { parseRecordData } from '../record-data.js'
import type { JournalRecord } from '../store.js'

export interface EffectRow {
  id: string
  journal: string
  effect: EffectSnapshot['effect']
  tier: number
  state: string
  last_seq: string
  detail: EffectSnapshot['detail']
  created_at: Date
  updated_at: Date
  /** Present where the query selects them (appends: the fencing check). */
  lease_relay?: string | null
  lease_token?: string | null
}

/** journal, seq, effect_id, state, at, data (text), prev_hash, hash: fetched with rowMode 'array'. */
export type RecordRow = [string, string, string, string, string, string, string, string]

/** A RecordRow with the hash of the record before it and the previous-hash of the one after it (stores/in-flight-check.ts). */
export type InFlightRecordRow = [...RecordRow, predecessor: string | null, successor: string | null]

/** One record of a history read, with the hash of the record before it in its journal (null: none). */
export interface HistoryRecordRow {
  journal: string
  seq: string
  effect_id: string
  state: string
  at: string
  data: string
  prev_hash: string
  hash: string
  predecessor: string | null
}

export function toSnapshot(row: EffectRow): EffectSnapshot {
  return {
    effect: row.effect,
    tier: row.tier as Tier,
    state: row.state as State,
    seq: Number(row.last_seq),
    detail: row.detail,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

export function toRecord(r: RecordRow): JournalRecord {
  return {
    journal: r[0],
    seq: Number(r[1]),
    effectId: r[2],
    state: r[3] as State,
    at: r[4],
    data: parseRecordData(r[0], Number(r[1]), r[5]),
    prevHash: r[6],
    hash: r[7],
  }
}

/** A history read's row as history-check.ts verifies it: the record, its stored data text and its predecessor's hash. */
export function toHistoryRow(r: HistoryRecordRow): HistoryRow {
  return {
    record: toRecord([r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash]),
    dataText: r.data,
    predecessorHash: r.predecessor,
  }
}

export function toInFlightRow(r: InFlightRecordRow): InFlightRow {
  return { journal: r[0], seq: Number(r[1]), effectId: r[2], state: r[3], at: r[4], dataText: r[5], prevHash: r[6], hash: r[7], predecessor: r[8], successor: r[9] }
}
