/**
 * Opening a SQLite journal file the one safe way.
 *
 * - WAL: readers never block the writer, and several processes may share the file.
 * - synchronous=FULL: in WAL mode the default (NORMAL) can lose the last
 *   commits on power loss, which would let a DISPATCHED record vanish after
 *   the effect went out. The setting is read back, and a connection that did
 *   not take it is refused (docs/design.md: nothing is dispatched before DISPATCHED
 *   is durable).
 * - busy_timeout: writers from other processes queue instead of failing.
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { StoreError } from '../../errors.js'
import { sqliteError } from './errors.js'

export type SqliteDatabase = Database.Database

/** The one driver call the durability check needs, so a test can hand it a fake. */
export interface PragmaConnection {
  pragma(source: string, options?: { simple?: boolean }): unknown
}

export const MEMORY = ':memory:'
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000
/**
 * WAL pages after which a commit also checkpoints (SQLite's default is 1000).
 * A checkpoint runs inside the commit that crosses the mark, on the append's
 * critical path, and costs about the same whatever its size: three extra
 * fsyncs (WAL, database, the restarted WAL's header) and the distinct pages
 * changed, which appends keep few (about 240 for 5,500 frames). Every 4,000
 * pages (16 MB at 4 KB pages) measured 4.02 fsyncs per sequential effect
 * instead of 4.09. The WAL file keeps its size and is overwritten from the
 * start after each checkpoint, which syncs faster than a growing file.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 4000
/** `PRAGMA synchronous` reads back 2 for FULL. */
const SYNCHRONOUS_FULL = 2

export interface SqliteOpenOptions {
  busyTimeoutMs?: number
  readonly?: boolean
}

export function openSqlite(file: string, options: SqliteOpenOptions = {}): SqliteDatabase {
  const busy = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
  let db: SqliteDatabase
  try {
    // The embedded default needs no set-up: create the journal's folder.
    if (file !== MEMORY && !options.readonly) mkdirSync(dirname(file), { recursive: true })
    db = new Database(file, { timeout: busy, readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false })
  } catch (cause) {
    throw new StoreError(`cannot open the SQLite journal ${file}: ${(cause as Error).message}`, {
      hint: 'Check [store] path in interlock.toml and that its folder is writable by this user.',
      context: { path: file },
      cause,
    })
  }
  // A read-only connection (install --dry-run) writes nothing, so durability does not apply.
  if (options.readonly) return db
  try {
    applyDurabilityPragmas(db, file, busy)
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
  } catch (e) {
    db.close()
    // The first statements on the file are where a damaged one shows (SQLITE_CORRUPT, SQLITE_NOTADB).
    throw sqliteError(e, 'opening', file)
  }
  return db
}

/** Sets and reads back the pragmas a journal connection relies on; refuses (StoreError) one that did not take. */
export function applyDurabilityPragmas(db: PragmaConnection, file: string, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): void {
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`)
  const mode = String(db.pragma('journal_mode = WAL', { simple: true })).toLowerCase()
  // An in-memory database has no file to put a WAL beside; it is for tests and demos and is never durable.
  const wanted = file === MEMORY ? 'memory' : 'wal'
  if (mode !== wanted) {
    throw new StoreError(`the SQLite journal ${file} is in journal mode ${mode}, not WAL`, {
      hint: 'Put the journal on a local file system that supports WAL (not a network share), and make sure no other program holds it in another mode.',
      context: { path: file, journalMode: mode },
    })
  }
  db.pragma('synchronous = FULL')
  const sync = db.pragma('synchronous', { simple: true })
  if (sync !== SYNCHRONOUS_FULL) {
    throw new StoreError(`the SQLite journal ${file} did not accept synchronous=FULL (it reads back ${String(sync)})`, {
      hint: 'Interlock needs every commit flushed to disk before it dispatches; use a SQLite build that allows synchronous=FULL.',
      context: { path: file, synchronous: sync },
    })
  }
}
