import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll } from 'vitest'
import { openSqliteNotaryStore } from '../../src/core/notary/sqlite/sqlite-notary-store.js'
import { notaryLogContract } from './notary-log.contract.js'

const dir = mkdtempSync(join(tmpdir(), 'interlock-notary-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const file = (name: string) => join(dir, `${name}.db`)

notaryLogContract('sqlite', {
  open: async (name) => openSqliteNotaryStore(file(name)),
  reopen: async (name) => openSqliteNotaryStore(file(name)),
  tamper: async (name, effect, seq, body) => {
    const db = new Database(file(name))
    db.prepare('UPDATE notary_records SET body = ? WHERE effect = ? AND seq = ?').run(JSON.stringify(body), effect, seq)
    db.close()
  },
  insert: async (name, r) => {
    const db = new Database(file(name))
    db.prepare('INSERT INTO notary_records (effect, seq, attempt, kind, writer, at, body, prev, signature, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
      r.effect, r.seq, r.attempt, r.kind, r.writer, r.at, JSON.stringify(r.body), r.prev, r.signature, r.hash,
    )
    db.close()
  },
  remove: async (name, effect, seq) => {
    const db = new Database(file(name))
    db.prepare('DELETE FROM notary_records WHERE effect = ? AND seq = ?').run(effect, seq)
    db.close()
  },
})
