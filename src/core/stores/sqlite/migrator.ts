/**
 * Applies the SQLite migrations to one open connection. The whole run is one
 * BEGIN IMMEDIATE transaction: the write lock is taken before the applied
 * versions are read, so two processes installing at once run one after the
 * other and the second finds nothing to do.
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

export function migrateSqlite(db: SqliteDatabase, file: string, options: { dryRun?: boolean; now?: () => Date } = {}): SqliteMigrationRun {
  const where = `the SQLite journal ${file}`
  if (options.dryRun) return { ...assessSchema('sqlite', readAppliedSqlite(db), where), applied: [] }
  const now = options.now ?? (() => new Date())
  const run = db.transaction((): SqliteMigrationRun => {
    db.exec(BOOTSTRAP)
    const plan = assessSchema('sqlite', readAppliedSqlite(db), where)
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
