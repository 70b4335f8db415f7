/**
 * `outbox prune` on SQLite (schemas/sqlite/0002_retention.sql): the same
 * contract as the PostgreSQL store's (postgres/prune.ts): the checkpoint
 * stored, then each journal cut in a write transaction of its own, checked
 * first, skipped when its base is at the cut already.
 */
import { IntegrityError } from '../../errors.js'
import { TERMINAL_STATES } from '../../lifecycle.js'
import type { JournalCut, PruneRequest, PruneResult } from '../store.js'
import type { SqliteDatabase } from './connection.js'

export function pruneSqlite(db: SqliteDatabase, request: PruneRequest, file: string): PruneResult {
  const c = request.checkpoint
  db.prepare(`INSERT INTO checkpoints (digest, made_at, document) VALUES (?, ?, ?) ON CONFLICT (digest) DO NOTHING`).run(c.digest, c.madeAt, JSON.stringify(c.document))
  const result: PruneResult = { journals: 0, records: 0, effects: 0 }
  const cutOne = db.transaction((cut: JournalCut) => cutJournal(db, cut, c.digest, file))
  for (const cut of request.cuts) {
    const done = cutOne.immediate(cut)
    if (done) {
      result.journals++
      result.records += done.records
      result.effects += done.effects
    }
  }
  return result
}

const TERMINAL = TERMINAL_STATES.map((s) => `'${s}'`).join(', ')

function cutJournal(db: SqliteDatabase, cut: JournalCut, checkpoint: string, file: string): { records: number; effects: number } | undefined {
  const refuse = (why: string) =>
    new IntegrityError(`not pruned: journal ${JSON.stringify(cut.journal)} ${why} in the SQLite journal ${file}`, {
      hint: 'The journal changed since it was verified, or was written behind Interlock. Run `interlock outbox verify`; nothing of this journal was deleted.',
      context: { journal: cut.journal, seq: cut.seq },
    })
  const base = db.prepare(`SELECT seq FROM journal_bases WHERE journal = ?`).get(cut.journal) as { seq: number } | undefined
  if (base && base.seq >= cut.seq) return undefined
  const at = db.prepare(`SELECT hash FROM journal_records WHERE journal = ? AND seq = ?`).get(cut.journal, cut.seq) as { hash: string } | undefined
  if (at?.hash !== cut.hash) throw refuse(at ? `record ${cut.seq} is not the one the checkpoint pins` : `has no record ${cut.seq}`)
  const ids = JSON.stringify(cut.effectIds)
  const other = db
    .prepare(`SELECT effect_id FROM journal_records WHERE journal = ? AND seq <= ? AND effect_id NOT IN (SELECT value FROM json_each(?)) LIMIT 1`)
    .get(cut.journal, cut.seq, ids) as { effect_id: string } | undefined
  if (other) throw refuse(`holds, at or before record ${cut.seq}, a record of effect ${other.effect_id}, which is not among those pruned`)
  const open = db
    .prepare(`SELECT id FROM effects WHERE id IN (SELECT value FROM json_each(?)) AND (journal <> ? OR state NOT IN (${TERMINAL}) OR last_seq > ?) LIMIT 1`)
    .get(ids, cut.journal, cut.seq) as { id: string } | undefined
  if (open) throw refuse(`lists effect ${open.id} to prune, which is not settled in it at or before record ${cut.seq}`)
  const records = db.prepare(`DELETE FROM journal_records WHERE journal = ? AND seq <= ?`).run(cut.journal, cut.seq).changes
  const effects = db.prepare(`DELETE FROM effects WHERE id IN (SELECT value FROM json_each(?))`).run(ids).changes
  db.prepare(
    `INSERT INTO journal_bases (journal, seq, hash, checkpoint) VALUES (?, ?, ?, ?)
     ON CONFLICT (journal) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, checkpoint = excluded.checkpoint`,
  ).run(cut.journal, cut.seq, cut.hash, checkpoint)
  return { records, effects }
}
