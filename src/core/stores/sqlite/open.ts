/**
 * Opens a SqliteStore on a file: connection with its durability pragmas,
 * schema installed or upgraded when asked (the embedded default), then the
 * schema version checked against this binary.
 */
import type { Clock } from '../../clock.js'
import { requireCurrentSchema } from '../migrations.js'
import { openSqlite } from './connection.js'
import { sqliteError } from './errors.js'
import { migrateSqlite, readAppliedSqlite } from './migrator.js'
import { SqliteStore } from './store.js'

export interface OpenSqliteOptions {
  autoInstall: boolean
  clock?: Clock
  busyTimeoutMs?: number
  /** Records per page for records() (tests use small pages). */
  pageSize?: number
}

export function openSqliteStore(file: string, options: OpenSqliteOptions): SqliteStore {
  const db = openSqlite(file, { busyTimeoutMs: options.busyTimeoutMs })
  try {
    if (options.autoInstall) migrateSqlite(db, file)
    let applied
    try {
      applied = readAppliedSqlite(db)
    } catch (e) {
      throw sqliteError(e, 'reading the schema version', file)
    }
    requireCurrentSchema('sqlite', applied, `the SQLite journal ${file}`)
    return new SqliteStore(db, file, { clock: options.clock, pageSize: options.pageSize })
  } catch (e) {
    db.close()
    throw e
  }
}
