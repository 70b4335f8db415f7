/**
 * The notary's log in SQLite (the embedded default), opened as the journal
 * is (stores/sqlite/connection.ts: WAL, synchronous=FULL, read back), so a
 * record the notary answered "written" for survives a power cut.
 */
import { openSqlite } from '../../stores/sqlite/connection.js'
import type { StoredRecord } from '../records.js'
import { isDecision, recordOf, type AppendResult, type DecisionRow, type NotaryStore, type RecordRow } from '../store.js'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS notary_records (
  effect    TEXT    NOT NULL,
  seq       INTEGER NOT NULL,
  attempt   INTEGER NOT NULL,
  kind      TEXT    NOT NULL CHECK (kind IN ('intend', 'claim', 'performed', 'failed', 'abort')),
  writer    TEXT    NOT NULL,
  at        TEXT    NOT NULL,
  body      TEXT    NOT NULL,
  prev      TEXT    NOT NULL,
  signature TEXT    NOT NULL,
  hash      TEXT    NOT NULL,
  PRIMARY KEY (effect, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS notary_decisions (
  effect   TEXT    NOT NULL,
  attempt  INTEGER NOT NULL,
  decision TEXT    NOT NULL CHECK (decision IN ('claim', 'abort')),
  writer   TEXT    NOT NULL,
  seq      INTEGER NOT NULL,
  PRIMARY KEY (effect, attempt)
) WITHOUT ROWID;
`

export function openSqliteNotaryStore(path: string): NotaryStore {
  const db = openSqlite(path)
  db.exec(SCHEMA)
  const chain = db.prepare<[string], RecordRow>('SELECT * FROM notary_records WHERE effect = ? ORDER BY seq')
  const head = db.prepare<[string], { seq: number; hash: string }>('SELECT seq, hash FROM notary_records WHERE effect = ? ORDER BY seq DESC LIMIT 1')
  const insert = db.prepare(
    'INSERT INTO notary_records (effect, seq, attempt, kind, writer, at, body, prev, signature, hash) VALUES (@effect, @seq, @attempt, @kind, @writer, @at, @body, @prev, @signature, @hash)',
  )
  const effects = db.prepare<[], { effect: string }>('SELECT effect FROM notary_records UNION SELECT effect FROM notary_decisions ORDER BY effect')
  const decisions = db.prepare<[string], DecisionRow>('SELECT effect, attempt, decision, writer, seq FROM notary_decisions WHERE effect = ? ORDER BY attempt')
  const decide = db.prepare('INSERT INTO notary_decisions (effect, attempt, decision, writer, seq) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING')
  const append = db.transaction((r: StoredRecord): AppendResult => {
    const h = head.get(r.effect)
    const headHash = h?.hash ?? '0'.repeat(64)
    if (headHash !== r.prev) return 'stale'
    const seq = (h?.seq ?? 0) + 1
    if (isDecision(r.kind) && decide.run(r.effect, r.attempt, r.kind, r.writer, seq).changes === 0) return 'decided'
    insert.run({ ...r, seq, body: JSON.stringify(r.body) })
    return 'appended'
  })
  return {
    async chain(effect) {
      return chain.all(effect).map(recordOf)
    },
    async append(record) {
      // IMMEDIATE: the head read and the inserts hold the write lock together, across processes too.
      return append.immediate(record)
    },
    async effects() {
      return effects.all().map((r) => r.effect)
    },
    async decisions(effect) {
      return decisions.all(effect)
    },
    async close() {
      db.close()
    },
  }
}
