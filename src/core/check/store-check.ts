/**
 * The store family: is the journal reachable, and is its schema the one this
 * binary writes? Read-only: a PostgreSQL store is asked for its applied
 * migrations (`schema_migrations`), a SQLite file is opened read-only (and
 * not created when absent), exactly as `interlock install --dry-run` would.
 *
 * PostgreSQL is installed by a DBA: opening it never installs or upgrades
 * it (stores/open.ts, autoInstall off), so a schema missing or behind this
 * binary fails, and the fix is `interlock install`. SQLite is installed and
 * upgraded by whatever opens it first (a submit, a relay, `outbox status`,
 * openInterlock()), so a missing or older file is a warning whose fix is
 * nothing at all, or `interlock install` to do it now.
 */
import { readReplication, replicationVerdict, type Queryable } from '../stores/postgres/replication.js'
import { existsSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import type { PostgresStoreConfig, SqliteStoreConfig } from '../config/types.js'
import { InterlockError } from '../errors.js'
import { assessSchema, fileName, latestVersion, type SchemaAssessment } from '../stores/migrations.js'
import { fail, pass, warn } from './rows.js'
import { withTimeout } from './timeout.js'
import type { CheckContext, CheckModule, CheckRow } from './types.js'

const INSTALL = 'Run `interlock install` against this store (`interlock install --print-sql` to review the SQL first).'
const SQLITE_CREATED =
  'Nothing to do for a new journal: the first command that opens it creates it (`interlock install` creates it now). If one should be there already, fix [store] path.'
const SQLITE_UPGRADED =
  'Nothing to do: the first command of this interlock that opens it upgrades it (`interlock install` upgrades it now; `--print-sql` shows the SQL). Older interlocks cannot open it after that.'
const REACHABLE = 'store reachable'
const SCHEMA = "store schema at this binary's version"

export const storeCheck: CheckModule = {
  family: 'store',
  async run(ctx: CheckContext): Promise<CheckRow[]> {
    const { store } = ctx.config
    // Any [store] key (url, path, schema) naming an unset variable: the journal it means is unknown, so nothing is opened.
    const unset = [...ctx.unset].filter(([path]) => path.startsWith('store.'))
    if (unset.length > 0) {
      const what = store.kind === 'sqlite' ? 'the path of the SQLite journal' : 'the connection string or schema of the Interlock database'
      return [
        fail(
          'store.reachable',
          REACHABLE,
          unset.map(([path, name]) => `${path}: environment variable ${name} is not set`).join('; '),
          `Export ${unset.map(([, name]) => name).join(', ')} (${what}).`,
        ),
      ]
    }
    try {
      return await withTimeout(ctx.timeoutMs, () => (store.kind === 'sqlite' ? checkSqlite(store) : checkPostgres(store, ctx.timeoutMs)))
    } catch (e) {
      return [fail('store.reachable', REACHABLE, (e as Error).message, 'Check [store] and that the database is up and reachable from here.')]
    }
  },
}

async function checkPostgres(store: PostgresStoreConfig, timeoutMs: number): Promise<CheckRow[]> {
  const { connectClient, describePostgres } = await import('../stores/postgres/connect.js')
  const { readAppliedPostgres } = await import('../stores/postgres/migrator.js')
  const where = describePostgres(store.url, store.schema)
  let client
  try {
    client = await connectClient(store.url, where, { connectTimeoutMs: timeoutMs })
  } catch (e) {
    const hint = e instanceof InterlockError && e.hint ? e.hint : 'Check [store] url and that PostgreSQL accepts connections from here.'
    return [fail('store.reachable', REACHABLE, (e as Error).message, hint)]
  }
  try {
    const reachable = pass('store.reachable', REACHABLE, `connected to ${where}`)
    try {
      const applied = await readAppliedPostgres(client, store.schema)
      return [reachable, schemaRow(assessSchema('postgres', applied, where), where, 'fail'), await replicationRow(client, store)]
    } catch (e) {
      return [reachable, schemaError(e)]
    }
  } finally {
    await client.end().catch(() => {})
  }
}

async function checkSqlite(store: SqliteStoreConfig): Promise<CheckRow[]> {
  const where = `SQLite journal ${store.path}`
  if (store.path === ':memory:') {
    return [warn('store.reachable', REACHABLE, 'path is ":memory:": the journal dies with the process', 'Use a file path for anything but tests.')]
  }
  if (!existsSync(store.path)) {
    const dir = dirname(store.path)
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      return [fail('store.reachable', REACHABLE, `${where}: folder ${dir} does not exist`, 'Create the folder, or fix [store] path.')]
    }
    return [
      pass('store.reachable', REACHABLE, `folder ${dir} exists`),
      warn('store.schema', SCHEMA, `${where} does not exist yet; the first command that opens it creates it at version ${latestVersion('sqlite')}`, SQLITE_CREATED),
    ]
  }
  const { openSqlite } = await import('../stores/sqlite/connection.js')
  const { readAppliedSqlite } = await import('../stores/sqlite/migrator.js')
  let db
  try {
    db = openSqlite(store.path, { readonly: true })
  } catch (e) {
    return [fail('store.reachable', REACHABLE, `${where} cannot be opened: ${(e as Error).message}`, 'Check the file\'s permissions, or fix [store] path.')]
  }
  try {
    const reachable = pass('store.reachable', REACHABLE, `opened ${where} read-only`)
    try {
      return [reachable, schemaRow(assessSchema('sqlite', readAppliedSqlite(db), where), where, 'warn')]
    } catch (e) {
      return [reachable, schemaError(e)]
    }
  } finally {
    db.close()
  }
}

/** `behind` is what a schema older than the binary's is: a failure for PostgreSQL, a warning for self-upgrading SQLite. */
function schemaRow(a: SchemaAssessment, where: string, behind: 'warn' | 'fail'): CheckRow {
  if (a.pending.length === 0) return pass('store.schema', SCHEMA, `${where} is at schema version ${a.currentVersion}, as this interlock needs`)
  const detail =
    a.currentVersion === 0
      ? `${where} has no Interlock schema installed (this interlock needs version ${a.targetVersion})`
      : `${where} is at schema version ${a.currentVersion}; this interlock needs ${a.targetVersion} (pending: ${a.pending.map(fileName).join(', ')})`
  return behind === 'fail' ? fail('store.schema', SCHEMA, detail, INSTALL) : warn('store.schema', SCHEMA, `${detail}; the first command of this interlock that opens it upgrades it`, SQLITE_UPGRADED)
}

function schemaError(e: unknown): CheckRow {
  const hint = e instanceof InterlockError && e.hint ? e.hint : INSTALL
  return fail('store.schema', SCHEMA, (e as Error).message, hint)
}

/** A failover must lose no DISPATCHED record (stores/postgres/replication.ts). */
async function replicationRow(client: Queryable, store: PostgresStoreConfig): Promise<CheckRow> {
  const NAME = 'commits survive a failover'
  try {
    const v = replicationVerdict(await readReplication(client), store.replication === 'async-accepted')
    if (!v.ok) return fail('store.replication', NAME, v.detail, v.fix ?? '')
    return v.accepted ? warn('store.replication', NAME, v.detail, 'Only if losing the last commits to a failover is acceptable.') : pass('store.replication', NAME, v.detail)
  } catch (e) {
    return warn('store.replication', NAME, `could not read the replication settings: ${(e as Error).message}`, 'Grant the role pg_monitor, or check by hand that commits are synchronously replicated.')
  }
}
