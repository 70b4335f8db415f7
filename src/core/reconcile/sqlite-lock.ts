/** The SQLite store's reconcile lock: see lock.ts for why a lock database, not a pid file. */
import Database from 'better-sqlite3'
import { MEMORY } from '../stores/sqlite/connection.js'
import { lockError, type ReconcileLock } from './lock.js'

export function trySqliteLock(journal: string): ReconcileLock | null {
  // An in-memory journal belongs to one connection of one process: nobody else can reconcile it.
  if (journal === MEMORY) return { where: MEMORY, release: async () => {} }
  const where = `${journal}.reconcile-lock`
  let db: Database.Database
  try {
    // timeout 0: a held lock is an answer ("already running"), not something to wait for.
    db = new Database(where, { timeout: 0 })
  } catch (e) {
    throw lockError(where, e)
  }
  try {
    // Rollback journal (not WAL): EXCLUSIVE then locks the file against every other connection.
    db.pragma('journal_mode = DELETE')
    db.exec('BEGIN EXCLUSIVE')
    // Writing makes the lock physical on every SQLite build (the file is locked from here).
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since TEXT)')
    db.prepare('INSERT INTO holder VALUES (?, ?)').run(process.pid, new Date().toISOString())
  } catch (e) {
    db.close()
    if (String((e as { code?: unknown }).code).startsWith('SQLITE_BUSY')) return null
    throw lockError(where, e)
  }
  return {
    where,
    release: async () => {
      // Nothing to keep: roll back, so the file stays empty between runs.
      if (db.inTransaction) db.exec('ROLLBACK')
      db.close()
    },
  }
}
