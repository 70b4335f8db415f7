/**
 * `interlock install`'s engine on real SQLite and PostgreSQL: idempotent,
 * safe when run twice at once, refuses a schema from the future or an
 * altered migration, prints reviewable SQL, and a dry run changes nothing.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../src/core/config/types.js'
import { SchemaVersionError, StoreError } from '../../src/core/errors.js'
import { describePostgres } from '../../src/core/stores/postgres/connect.js'
import { install, installSql, planInstall, type InstallReport } from '../../src/core/stores/migrate.js'
import { latestVersion, loadMigrations } from '../../src/core/stores/migrations.js'
import { openStore } from '../../src/core/stores/open.js'
import { effect, propose } from '../contract/fixtures.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

const run = promisify(execFile)
const runner = join(import.meta.dirname, '..', 'helpers', 'install-runner.ts')

/** `install` in a separate process, so several really run at once. */
async function installElsewhere(config: StoreConfig): Promise<InstallReport> {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', runner, JSON.stringify(config)])
    return JSON.parse(stdout) as InstallReport
  } catch (e) {
    // The runner prints what install threw on stdout: keep it in the failure, not only the exit code.
    const { stdout, stderr } = e as { stdout?: string; stderr?: string }
    throw new Error(`install in another process failed: ${stdout ?? ''} ${stderr ?? ''}`.trim(), { cause: e })
  }
}

// Every shipped migration, in order: the tests hold whatever numbers later features add.
const ALL = (kind: 'sqlite' | 'postgres') => loadMigrations(kind).map((m) => expect.objectContaining({ version: m.version, name: m.name }))
const COUNT = (kind: 'sqlite' | 'postgres') => loadMigrations(kind).length
const CORE_TABLES = ['effects', 'journal_records', 'journals', 'schema_migrations']

const dir = mkdtempSync(join(tmpdir(), 'interlock-install-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const sqliteConfig = (): StoreConfig & { kind: 'sqlite' } => ({ kind: 'sqlite', path: join(dir, `install-${++n}`, 'journal.db') })

describe('install on SQLite', () => {
  it('installs a fresh journal, then finds nothing to do', async () => {
    const config = sqliteConfig()
    const first = await install(config)
    expect(first).toMatchObject({ kind: 'sqlite', location: config.path, dryRun: false, currentVersion: 0, targetVersion: latestVersion('sqlite'), pending: [] })
    expect(first.applied).toEqual(ALL('sqlite'))
    const second = await install(config)
    expect(second).toMatchObject({ currentVersion: latestVersion('sqlite'), targetVersion: latestVersion('sqlite'), applied: [], pending: [] })
    const db = new Database(config.path, { readonly: true })
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all()
    expect(tables).toEqual(expect.arrayContaining(CORE_TABLES))
    expect(db.prepare('SELECT count(*) FROM schema_migrations').pluck().get()).toBe(COUNT('sqlite'))
    db.close()
  })

  it('two installs at once (two processes): one applies, the other finds it done', async () => {
    const config = sqliteConfig()
    const reports = await Promise.all([installElsewhere(config), installElsewhere(config), installElsewhere(config)])
    expect(reports.map((r) => r.applied.length).sort()).toEqual([0, 0, COUNT('sqlite')])
    const db = new Database(config.path, { readonly: true })
    expect(db.prepare('SELECT count(*) FROM schema_migrations').pluck().get()).toBe(COUNT('sqlite'))
    db.close()
  })

  it('dry run: reports what it would apply and creates nothing, not even the file', async () => {
    const config = sqliteConfig()
    const plan = await planInstall(config)
    expect(plan).toMatchObject({ dryRun: true, currentVersion: 0, targetVersion: latestVersion('sqlite'), applied: [] })
    expect(plan.pending).toEqual(ALL('sqlite'))
    expect(existsSync(config.path)).toBe(false)
  })

  it('dry run on an existing, empty database leaves it empty', async () => {
    const config = sqliteConfig()
    mkdirSync(join(config.path, '..'), { recursive: true })
    new Database(config.path).close()
    const plan = await install(config, { dryRun: true })
    expect(plan.pending).toHaveLength(COUNT('sqlite'))
    const db = new Database(config.path, { readonly: true })
    expect(db.prepare(`SELECT count(*) FROM sqlite_master`).pluck().get()).toBe(0)
    db.close()
  })

  it('refuses a journal whose schema is newer than this binary', async () => {
    const config = sqliteConfig()
    await install(config)
    const db = new Database(config.path)
    db.prepare(`INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (99, 'future', 'x', 'now')`).run()
    db.close()
    for (const attempt of [() => install(config), () => planInstall(config), () => openStore(config)]) {
      const err = await attempt().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(SchemaVersionError)
      expect((err as Error).message).toContain(`schema version 99 (future), newer than this interlock knows (${latestVersion('sqlite')})`)
    }
  })

  it('refuses a journal whose applied migration differs from the shipped one', async () => {
    const config = sqliteConfig()
    await install(config)
    const db = new Database(config.path)
    db.prepare(`UPDATE schema_migrations SET checksum = 'deadbeef' WHERE version = 1`).run()
    db.close()
    await expect(install(config)).rejects.toThrow(/migration 0001_baseline\.sql was applied with a different text/)
  })

  it('with nothing pending, writes nothing: it takes no write lock, so it finishes while another process holds one', async () => {
    const config = sqliteConfig()
    await install(config)
    const holder = new Database(config.path)
    holder.exec('BEGIN IMMEDIATE')
    try {
      const started = performance.now()
      const again = await install(config)
      expect(again).toMatchObject({ applied: [], pending: [], currentVersion: latestVersion('sqlite') })
      // A write lock would have been waited for up to the busy timeout (10 s), then refused.
      expect(performance.now() - started).toBeLessThan(3000)
      const store = await openStore(config, { groupCommit: false })
      expect(await store.countByState()).toMatchObject({ PROPOSED: 0 })
      await store.close()
    } finally {
      holder.exec('ROLLBACK')
      holder.close()
    }
  })

  it('refuses, by name, a journal a development build installed before the baseline', async () => {
    const config = sqliteConfig()
    mkdirSync(join(config.path, '..'), { recursive: true })
    const db = new Database(config.path)
    db.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)`)
    for (const [v, name] of [[1, 'init'], [3, 'relay'], [11, 'lean_appends']] as const) {
      db.prepare(`INSERT INTO schema_migrations VALUES (?, ?, ?, '2026-01-01T00:00:00Z')`).run(v, name, 'c'.repeat(64))
    }
    db.close()
    for (const attempt of [() => install(config), () => planInstall(config), () => openStore(config)]) {
      const err = await attempt().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(SchemaVersionError)
      expect((err as Error).message).toMatch(/was installed by a development build of interlock \(its migration 0001_init\.sql\), before the first release's baseline/)
    }
  })

  it('print-sql: the DDL, runnable by hand, gives a journal openStore accepts', async () => {
    const sql = installSql('sqlite')
    for (const ddl of ['CREATE TABLE journals', 'CREATE TABLE effects', 'CREATE TABLE journal_records', 'CREATE TABLE IF NOT EXISTS schema_migrations', 'INSERT INTO schema_migrations']) {
      expect(sql).toContain(ddl)
    }
    const config = sqliteConfig()
    mkdirSync(join(config.path, '..'), { recursive: true })
    const db = new Database(config.path)
    db.exec(sql)
    db.close()
    const store = await openStore(config, { autoInstall: false })
    expect((await store.append([propose(effect('t', 1))]))[0]!.ok).toBe(true)
    await store.close()
    expect((await install(config)).applied).toEqual([])
  })
})

describe('install on PostgreSQL', () => {
  let db: TestDatabase
  let admin: pg.Client
  beforeAll(async () => {
    db = await createTestDatabase()
    admin = new pg.Client({ connectionString: db.url })
    await admin.connect()
  })
  afterAll(async () => {
    await admin?.end()
    await db?.drop()
  })
  let s = 0
  const pgConfig = (): StoreConfig & { kind: 'postgres' } => ({ kind: 'postgres', url: db.url, schema: `install_${++s}` })
  const tablesOf = async (schema: string) =>
    (await admin.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [schema])).rows.map((r) => r.table_name)

  it('installs a fresh schema, then finds nothing to do', async () => {
    const config = pgConfig()
    const first = await install(config)
    expect(first).toMatchObject({ kind: 'postgres', currentVersion: 0, targetVersion: latestVersion('postgres'), pending: [] })
    expect(first.location).toBe(`PostgreSQL schema "${config.schema}" in database ${new URL(db.url).pathname.slice(1)} on 127.0.0.1:${new URL(db.url).port}`)
    expect(first.location).not.toContain('interlock-test') // the password
    expect(first.applied).toEqual(ALL('postgres'))
    expect(await tablesOf(config.schema)).toEqual(expect.arrayContaining(CORE_TABLES))
    expect(await install(config)).toMatchObject({ currentVersion: latestVersion('postgres'), applied: [], pending: [] })
  })

  it('installs as a role that owns the schema a DBA made for it, without the right to create schemas in the database', async () => {
    const config = pgConfig()
    const role = `install_owner_${randomBytes(4).toString('hex')}`
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'owner-pw'`)
    try {
      await admin.query(`CREATE SCHEMA "${config.schema}" AUTHORIZATION ${role}`)
      const url = new URL(db.url)
      url.username = role
      url.password = 'owner-pw'
      const asOwner = { ...config, url: url.toString() }
      expect((await install(asOwner)).applied).toEqual(ALL('postgres'))
      expect((await install(asOwner)).applied).toEqual([])
      const owners = await admin.query(`SELECT DISTINCT pg_get_userbyid(relowner) AS o FROM pg_class WHERE relnamespace = $1::regnamespace`, [config.schema])
      expect(owners.rows).toEqual([{ o: role }])
    } finally {
      await admin.query(`DROP OWNED BY ${role}`)
      await admin.query(`DROP ROLE ${role}`)
    }
  })

  /** A login role of the test's own, dropped with what it owns when done. */
  async function withRole<T>(fn: (url: string, role: string) => Promise<T>): Promise<T> {
    const role = `install_role_${randomBytes(4).toString('hex')}`
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'role-pw'`)
    try {
      const url = new URL(db.url)
      url.username = role
      url.password = 'role-pw'
      return await fn(url.toString(), role)
    } finally {
      await admin.query(`DROP OWNED BY ${role}`)
      await admin.query(`DROP ROLE ${role}`)
    }
  }

  it('with nothing pending, writes nothing: a role that may create nothing (a relay\'s) runs it, and its dry run agrees', async () => {
    const config = pgConfig()
    await install(config)
    await withRole(async (url, role) => {
      // What --print-grants gives a read-only role: the schema's use, and reading its tables.
      await admin.query(`GRANT USAGE ON SCHEMA "${config.schema}" TO ${role}`)
      await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA "${config.schema}" TO ${role}`)
      const asReader = { ...config, url }
      const plan = await planInstall(asReader)
      const real = await install(asReader)
      for (const r of [plan, real]) expect(r).toMatchObject({ currentVersion: latestVersion('postgres'), applied: [], pending: [] })
      const { rows } = await admin.query(`SELECT has_schema_privilege($1, $2, 'CREATE') AS create`, [role, config.schema])
      expect(rows[0].create).toBe(false)
    })
  })

  it('with something pending, the dry run refuses what the real run would refuse, in the same words: a role that may not create the schema', async () => {
    const config = pgConfig()
    await withRole(async (url, role) => {
      const asRole = { ...config, url }
      const errors = [await planInstall(asRole).catch((e: unknown) => e), await install(asRole).catch((e: unknown) => e)]
      for (const err of errors) {
        expect(err).toBeInstanceOf(StoreError)
        expect((err as Error).message).toBe(`${describePostgres(db.url, config.schema)} does not exist, and role "${role}" may not create schemas in the database`)
      }
      const { rows } = await admin.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [config.schema])
      expect(rows).toEqual([])
    })
  })

  it('with something pending, a role that does not own the schema is refused before anything is applied, dry run and real run alike', async () => {
    const config = pgConfig()
    await install(config, { migrations: loadMigrations('postgres').slice(0, 1) })
    await withRole(async (url, role) => {
      await admin.query(`GRANT USAGE, CREATE ON SCHEMA "${config.schema}" TO ${role}`)
      await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA "${config.schema}" TO ${role}`)
      const asRole = { ...config, url }
      for (const attempt of [() => planInstall(asRole), () => install(asRole)]) {
        const err = await attempt().catch((e: unknown) => e)
        expect(err).toBeInstanceOf(StoreError)
        expect((err as Error).message).toMatch(new RegExp(`has migrations pending, and role "${role}" cannot apply them: the schema is owned by "postgres"$`))
        expect((err as StoreError).hint).toMatch(/as the installer role \("postgres"/)
      }
      const { rows } = await admin.query(`SELECT max(version)::int AS v FROM "${config.schema}".schema_migrations`)
      expect(rows[0].v).toBe(1)
    })
  })

  it('dry run lists what each pending migration locks, and how it runs', async () => {
    const config = pgConfig()
    await install(config, { migrations: loadMigrations('postgres').slice(0, 1) })
    const plan = await planInstall(config)
    expect(plan.currentVersion).toBe(1)
    expect(plan.pending.map((m) => m.name)).toEqual(loadMigrations('postgres').slice(1).map((m) => m.name))
    const byName = new Map(plan.pending.map((m) => [m.name, m]))
    expect(byName.get('retention')).toMatchObject({ transaction: true, locks: [{ relation: 'own_records', mode: 'ACCESS EXCLUSIVE' }] })
    expect(byName.get('operator_indexes')).toMatchObject({ transaction: false, locks: [{ relation: 'effects', mode: 'SHARE UPDATE EXCLUSIVE' }] })
    for (const m of plan.pending) for (const l of m.locks) expect(l.note.length).toBeGreaterThan(10)
  })

  it('refuses, by name, a schema a development build installed before the baseline; openStore too', async () => {
    const config = pgConfig()
    await admin.query(`CREATE SCHEMA "${config.schema}"`)
    await admin.query(`CREATE TABLE "${config.schema}".schema_migrations (version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    for (const [v, name] of [[1, 'init'], [3, 'relay'], [12, 'agent_access']] as const) {
      await admin.query(`INSERT INTO "${config.schema}".schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`, [v, name, 'c'.repeat(64)])
    }
    for (const attempt of [() => install(config), () => planInstall(config), () => openStore(config)]) {
      const err = await attempt().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(SchemaVersionError)
      expect((err as Error).message).toMatch(/was installed by a development build of interlock \(its migration 0001_init\.sql\), before the first release's baseline; this interlock cannot upgrade it$/)
      expect((err as SchemaVersionError).hint).toMatch(/new schema/)
    }
  })

  it('concurrent installs (in-process and in other processes): exactly one applies', async () => {
    const config = pgConfig()
    const reports = await Promise.all([install(config), install(config), installElsewhere(config), installElsewhere(config)])
    expect(reports.map((r) => r.applied.length).sort()).toEqual([0, 0, 0, COUNT('postgres')])
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${config.schema}.schema_migrations`)
    expect(rows[0].n).toBe(COUNT('postgres'))
  })

  it('dry run creates nothing: no schema before, nothing new after', async () => {
    const config = pgConfig()
    const plan = await planInstall(config)
    expect(plan).toMatchObject({ dryRun: true, currentVersion: 0, applied: [] })
    expect(plan.pending).toEqual(ALL('postgres'))
    const { rows } = await admin.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [config.schema])
    expect(rows).toEqual([])
    await install(config)
    expect(await planInstall(config)).toMatchObject({ currentVersion: latestVersion('postgres'), pending: [], applied: [] })
  })

  it('refuses a schema newer than this binary, and openStore refuses it too', async () => {
    const config = pgConfig()
    await install(config)
    await admin.query(`INSERT INTO ${config.schema}.schema_migrations (version, name, checksum) VALUES (99, 'future', 'x')`)
    for (const attempt of [() => install(config), () => planInstall(config), () => openStore(config)]) {
      const err = await attempt().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(SchemaVersionError)
      expect((err as Error).message).toContain(`schema version 99 (future), newer than this interlock knows (${latestVersion('postgres')})`)
      expect((err as SchemaVersionError).hint).toMatch(/Upgrade interlock/)
    }
  })

  it('refuses an applied migration whose checksum changed', async () => {
    const config = pgConfig()
    await install(config)
    await admin.query(`UPDATE ${config.schema}.schema_migrations SET checksum = 'deadbeef' WHERE version = 1`)
    await expect(install(config)).rejects.toThrow(/0001_baseline\.sql was applied with a different text/)
  })

  it('print-sql: names the schema, takes the install lock, and run by hand gives a schema openStore accepts', async () => {
    const config = pgConfig()
    const sql = installSql('postgres', config.schema)
    for (const ddl of [
      `CREATE SCHEMA "${config.schema}"`,
      `CREATE TABLE "${config.schema}".effects`,
      `CREATE TABLE "${config.schema}".journal_records`,
      `CREATE TABLE "${config.schema}".journals`,
      `CREATE TABLE IF NOT EXISTS "${config.schema}".schema_migrations`,
      'pg_advisory_lock(',
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS effects_created_idx ON "${config.schema}".effects (created_at, id);`,
    ]) {
      expect(sql).toContain(ddl)
    }
    expect(sql).not.toContain(':"schema"')
    // As docs/dbas.md says to run it: psql, one statement at a time (an index built concurrently cannot run in a transaction).
    const file = join(dir, `install-${config.schema}.sql`)
    writeFileSync(file, sql)
    await run('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', file, db.url])
    const store = await openStore(config)
    expect((await store.append([propose(effect('t', 1))]))[0]!.ok).toBe(true)
    await store.close()
    expect((await install(config)).applied).toEqual([])
  })

  it('print-sql refuses an unsafe schema name', () => {
    expect(() => installSql('postgres', 'x"; DROP SCHEMA public; --')).toThrow(/not a valid schema name/)
  })
})
