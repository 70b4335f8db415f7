/**
 * `interlock install`'s engine: create or upgrade a store's schema.
 *
 * - Idempotent: a second run finds nothing pending and applies nothing, and
 *   writes nothing (so it needs no right to create anything).
 * - Safe when run twice at once: PostgreSQL takes an advisory lock for the
 *   whole run, SQLite a BEGIN IMMEDIATE write lock; the loser waits, then
 *   finds the work done.
 * - Safe beside running relays (PostgreSQL): lock_timeout with retries, and
 *   indexes built concurrently (postgres/migrator.ts).
 * - Refuses (SchemaVersionError) a database ahead of this binary, one whose
 *   applied migration differs from the shipped file, or one installed before
 *   the baseline.
 * - `dryRun` reads only: it reports what would be applied, and what each
 *   pending migration locks, and creates nothing (not even an empty SQLite
 *   file); it refuses what the real run would refuse.
 */
import { existsSync } from 'node:fs'
import type { StoreConfig } from '../config/types.js'
import { info, latestVersion, loadMigrations, pendingInfo, type Migration, type MigrationInfo, type PendingMigration, type StoreKind } from './migrations.js'
// The SQL text builders load no driver; the drivers themselves are imported only when used.
import { quoteSchema } from './postgres/identifier.js'
import { migratePostgres, postgresInstallSql, type LockPolicy } from './postgres/migrator.js'
import { migrateSqlite, sqliteInstallSql } from './sqlite/migrator.js'

export type { MigrationInfo, MigrationLock, PendingMigration, StoreKind } from './migrations.js'
export type { LockHolder, LockWait } from './postgres/migrator.js'

export interface InstallReport {
  kind: StoreKind
  /** Where, without credentials: a SQLite path or a PostgreSQL schema, database and host. */
  location: string
  dryRun: boolean
  /** The database's schema version before this run (0: nothing installed). */
  currentVersion: number
  /** The version this binary installs and opens. */
  targetVersion: number
  /** Migrations this run applied (none on a dry run). */
  applied: MigrationInfo[]
  /** Migrations still to apply, with what each locks: what a dry run would do; empty after a real run. */
  pending: PendingMigration[]
}

export interface InstallOptions extends LockPolicy {
  dryRun?: boolean
  /** The migrations to apply (default: the ones this binary ships). */
  migrations?: readonly Migration[]
}

/** What `install` would do, changing nothing. */
export function planInstall(config: StoreConfig): Promise<InstallReport> {
  return install(config, { dryRun: true })
}

export async function install(config: StoreConfig, options: InstallOptions = {}): Promise<InstallReport> {
  const dryRun = options.dryRun ?? false
  if (config.kind === 'sqlite') {
    const { openSqlite, MEMORY } = await import('./sqlite/connection.js')
    const location = config.path
    const known = options.migrations ?? loadMigrations('sqlite')
    if (dryRun && config.path !== MEMORY && !existsSync(config.path)) {
      return report('sqlite', location, true, 0, known.at(-1)?.version ?? latestVersion('sqlite'), [], known)
    }
    const db = openSqlite(config.path, { readonly: dryRun && config.path !== MEMORY })
    try {
      const run = migrateSqlite(db, config.path, { dryRun, migrations: known })
      return report('sqlite', location, dryRun, run.currentVersion, run.targetVersion, run.applied, run.pending)
    } finally {
      db.close()
    }
  }
  const { connectClient, describePostgres } = await import('./postgres/connect.js')
  quoteSchema(config.schema)
  const location = describePostgres(config.url, config.schema)
  const client = await connectClient(config.url, location)
  try {
    const run = await migratePostgres(client, config.schema, location, { ...options, dryRun })
    return report('postgres', location, dryRun, run.currentVersion, run.targetVersion, run.applied, run.pending)
  } finally {
    await client.end().catch(() => {})
  }
}

/** The whole install as SQL, for review (`interlock install --print-sql`); `schema` is PostgreSQL's (default "interlock"). */
export function installSql(kind: StoreKind, schema = 'interlock'): string {
  return kind === 'sqlite' ? sqliteInstallSql() : postgresInstallSql(schema)
}

function report(
  kind: StoreKind,
  location: string,
  dryRun: boolean,
  currentVersion: number,
  targetVersion: number,
  applied: MigrationInfo[],
  pending: readonly Migration[],
): InstallReport {
  return { kind, location, dryRun, currentVersion, targetVersion, applied: applied.map(info), pending: pending.map(pendingInfo) }
}
