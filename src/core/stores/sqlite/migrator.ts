/**
 * Applies the SQLite migrations to one open connection. The applied versions
 * are read first, writing nothing: a journal already at this version is left
 * alone (a read-only file, or a reader without write access, opens fine).
 * When something is pending, the whole run is one BEGIN IMMEDIATE
 * transaction: the write lock is taken before the applied versions are read
 * again, so two processes installing at once run one after the other and the
 * second finds nothing to do.
 */
import { assessSchema, info, loadMigrations, type Migration, type MigrationInfo, type SchemaAssessment } from '../migrations.js'
import type { SqliteDatabase } from './connection.js'
import { sqliteError } from './errors.js'

const BOOTSTRAP = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  checksum   TEXT NOT NULL,
  applied_at TEXT NOT NULL
);`

export interface SqliteMigrationRun extends SchemaAssessment {
  applied: Migration[]
}

export function readAppliedSqlite(db: SqliteDatabase): MigrationInfo[] {
  const table = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).get()
  if (!table) return []
  return db.prepare(`SELECT version, name, checksum FROM schema_migrations ORDER BY version`).all() as MigrationInfo[]
}

export function migrateSqlite(
  db: SqliteDatabase,
  file: string,
  options: { dryRun?: boolean; now?: () => Date; migrations?: readonly Migration[] } = {},
): SqliteMigrationRun {
  const where = `the SQLite journal ${file}`
  const known = options.migrations ?? loadMigrations('sqlite')
  let first: SchemaAssessment
  try {
    first = assessSchema('sqlite', readAppliedSqlite(db), where, known)
  } catch (e) {
    throw sqliteError(e, 'reading the schema version', file)
  }
  if (options.dryRun || first.pending.length === 0) return { ...first, applied: [] }
  const now = options.now ?? (() => new Date())
  const run = db.transaction((): SqliteMigrationRun => {
    db.exec(BOOTSTRAP)
    const plan = assessSchema('sqlite', readAppliedSqlite(db), where, known)
    const record = db.prepare(`INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)`)
    for (const m of plan.pending) {
      db.exec(m.sql)
      record.run(m.version, m.name, m.checksum, now().toISOString())
    }
    return { ...plan, applied: plan.pending, pending: [] }
  })
  try {
    return run.immediate()
  } catch (e) {
    throw sqliteError(e, 'installing the schema', file)
  }
}

/** The full install as one script, for review (`interlock install --print-sql`). */
export function sqliteInstallSql(): string {
  const parts = ['BEGIN IMMEDIATE;', '', BOOTSTRAP, '']
  for (const m of loadMigrations('sqlite')) {
    const { version, name, checksum } = info(m)
    parts.push(`-- ${String(version).padStart(4, '0')}_${name}.sql`, m.sql.trimEnd(), '')
    parts.push(
      `INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (${version}, '${name}', '${checksum}', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));`,
      '',
    )
  }
  parts.push('COMMIT;', '')
  return parts.join('\n')
}
