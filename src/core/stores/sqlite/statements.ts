/** Every SQL statement the SQLite store runs, prepared once per connection. */
import type { Statement } from 'better-sqlite3'
import { STATES, TERMINAL_STATES } from '../../lifecycle.js'
import type { SqliteDatabase } from './connection.js'

export interface EffectRow {
  id: string
  journal: string
  effect: string
  tier: number
  state: string
  last_seq: number
  detail: string
  created_at: string
  updated_at: string
  /** Selected by appends only (the fencing check). */
  lease_relay?: string | null
  lease_token?: number | null
}

/** What an append reads of an effect: its row, and its journal's head (null when the journal has none). */
export interface AppendRow extends EffectRow {
  head_seq: number | null
  head_hash: string | null
}

export type RecordRow = [journal: string, seq: number, effectId: string, state: string, at: string, data: string, prevHash: string, hash: string]
/** An in-flight effect's record with the hash of the record before it and the previous-hash of the one after it (in-flight-check.ts). */
export type InFlightRecordRow = [...RecordRow, predecessor: string | null, successor: string | null]
/** Where a journal ends: its head row (nulls without one), the record at the head, the first record past it. */
export interface EndRow {
  head_seq: number | null
  head_hash: string | null
  at_head: string | null
  beyond: number | null
}

export const EFFECT_COLUMNS = 'id, journal, effect, tier, state, last_seq, detail, created_at, updated_at'
const RECORD_COLUMNS = 'journal, seq, effect_id, state, at, data, prev_hash, hash'
// HELD and AMBIGUOUS wait for people but are not settled: recovery must see them.
const UNSETTLED = STATES.filter((s) => !TERMINAL_STATES.includes(s))
  .map((s) => `'${s}'`)
  .join(', ')

// The names, so the prepared set has a type that declaration files can spell.
const NAMES = [
  'effectForAppend', 'effect', 'head', 'insertRecord', 'insertEffect', 'updateEffect', 'settleEffect', 'insertHead', 'updateHead',
  'history', 'inFlight', 'inFlightRecords', 'journalEnd', 'countSettled', 'countOpen', 'recordsPage', 'base', 'checkpoints',
  'rememberRead', 'recallRead', 'insertSeal', 'seals',
] as const
export type Statements = Record<(typeof NAMES)[number], Statement>

export function prepareStatements(db: SqliteDatabase): Statements {
  return {
    // One primary-key probe per effect, with its journal's head: the usual append (one step of one
    // existing effect) reads everything it needs in one statement.
    effectForAppend: db.prepare(
      `SELECT ${EFFECT_COLUMNS.split(', ').map((c) => `e.${c}`).join(', ')}, e.lease_relay, e.lease_token, j.head_seq, j.head_hash
       FROM effects e LEFT JOIN journals j ON j.journal = e.journal WHERE e.id = ?`,
    ),
    effect: db.prepare(`SELECT ${EFFECT_COLUMNS} FROM effects WHERE id = ?`),
    head: db.prepare(`SELECT head_seq, head_hash FROM journals WHERE journal = ?`),
    insertRecord: db.prepare(`INSERT INTO journal_records (${RECORD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
    insertEffect: db.prepare(
      `INSERT INTO effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at, settled_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // The SQL half of compare-and-set: the row must still be where the transaction read it.
    // Steps between open states leave settled_at alone, so they touch no index (schemas/sqlite/0001_baseline.sql);
    // the step that settles an effect sets it, which takes the effect out of effects_open.
    updateEffect: db.prepare(`UPDATE effects SET state = ?, last_seq = ?, detail = ?, updated_at = ? WHERE id = ? AND last_seq = ?`),
    settleEffect: db.prepare(`UPDATE effects SET state = ?, last_seq = ?, detail = ?, updated_at = ?, settled_at = ? WHERE id = ? AND last_seq = ?`),
    insertHead: db.prepare(`INSERT INTO journals (journal, head_seq, head_hash) VALUES (?, ?, ?)`),
    updateHead: db.prepare(`UPDATE journals SET head_seq = ?, head_hash = ? WHERE journal = ?`),
    // The index by effect holds a prefix of the id (schemas/sqlite/0001_baseline.sql): the same expression finds it.
    // A record whose predecessor was pruned links to its journal's base (the last record removed).
    history: db.prepare(
      `SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash, coalesce(p.hash, b.hash) AS predecessor
       FROM journal_records r LEFT JOIN journal_records p ON p.journal = r.journal AND p.seq = r.seq - 1
       LEFT JOIN journal_bases b ON b.journal = r.journal AND b.seq = r.seq - 1
       WHERE substr(r.effect_id, 1, 16) = substr(?, 1, 16) AND r.effect_id = ? ORDER BY r.journal, r.seq`,
    ),
    base: db.prepare(`SELECT seq, hash FROM journal_bases WHERE journal = ?`),
    checkpoints: db.prepare(`SELECT digest, made_at, document FROM checkpoints ORDER BY made_at, digest`),
    insertSeal: db.prepare(`INSERT INTO seals (at, seal) VALUES (?, ?)`),
    seals: db.prepare(`SELECT seal FROM seals ORDER BY id`),
    // `settled_at IS NULL` lets SQLite read the partial index effects_open instead of the whole table.
    inFlight: db.prepare(`SELECT id, journal, state, last_seq FROM effects WHERE settled_at IS NULL AND state IN (${UNSETTLED})`),
    countSettled: db.prepare(`SELECT state, count(*) AS n FROM effects WHERE settled_at IS NOT NULL GROUP BY state`),
    countOpen: db.prepare(`SELECT state, count(*) AS n FROM effects WHERE settled_at IS NULL GROUP BY state`),
    // Recovery's read: one in-flight effect's records, each with its neighbours' links (in-flight-check.ts),
    // by the index of effect ids and primary-key probes: nothing of the journal around them.
    inFlightRecords: db
      .prepare(
        `SELECT r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash, coalesce(p.hash, b.hash), n.prev_hash
         FROM journal_records r LEFT JOIN journal_records p ON p.journal = r.journal AND p.seq = r.seq - 1
         LEFT JOIN journal_bases b ON b.journal = r.journal AND b.seq = r.seq - 1
         LEFT JOIN journal_records n ON n.journal = r.journal AND n.seq = r.seq + 1
         WHERE substr(r.effect_id, 1, 16) = substr(?, 1, 16) AND r.effect_id = ?`,
      )
      .raw(true),
    // A journal pruned right up to its head has its head in its base. Each parameter is the journal.
    journalEnd: db.prepare(
      `SELECT j.head_seq, j.head_hash,
         coalesce((SELECT hash FROM journal_records WHERE journal = ? AND seq = j.head_seq),
                  (SELECT hash FROM journal_bases WHERE journal = ? AND seq = j.head_seq)) AS at_head,
         (SELECT seq FROM journal_records WHERE journal = ? AND seq > coalesce(j.head_seq, 0) ORDER BY seq LIMIT 1) AS beyond
       FROM (SELECT 1) LEFT JOIN journals j ON j.journal = ?`,
    ),
    recordsPage: db
      .prepare(`SELECT ${RECORD_COLUMNS} FROM journal_records WHERE (journal, seq) > (?, ?) ORDER BY journal, seq LIMIT ?`)
      .raw(true),
    // What a caller's thread read (schemas/sqlite/0003_callers.sql): the last answer of each read wins.
    rememberRead: db.prepare(
      `INSERT INTO thread_reads (principal, thread, target, read, digest, read_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (principal, thread, target, read) DO UPDATE SET digest = excluded.digest, read_at = excluded.read_at`,
    ),
    recallRead: db.prepare(`SELECT digest FROM thread_reads WHERE principal = ? AND thread = ? AND target = ? AND read = ?`).pluck(),
  }
}
