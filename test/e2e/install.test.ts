/**
 * `interlock install` as a DBA runs it: the built binary against a fresh
 * folder (SQLite) and a fresh PostgreSQL database, judged by exit code and output.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { latestVersion, loadMigrations, fileName } from '../../src/core/stores/migrations.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

beforeAll(assertCliBuilt)

function folder(config: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-e2e-install-'))
  writeFileSync(join(dir, 'interlock.toml'), config)
  return dir
}

const SQLITE = `[store]\npath = "journal.db"\n`

describe('interlock install (SQLite)', () => {
  it('--print-sql prints the DDL and touches nothing', async () => {
    const cwd = folder(SQLITE)
    const run = await interlock(['install', '--print-sql'], { cwd })
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('CREATE TABLE journal_records')
    expect(run.stdout).toContain('CREATE TABLE IF NOT EXISTS schema_migrations')
    expect(existsSync(join(cwd, 'journal.db'))).toBe(false)
  })

  it('--dry-run says what it would apply and creates nothing', async () => {
    const cwd = folder(SQLITE)
    const run = await interlock(['install', '--dry-run'], { cwd })
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(`Would apply: ${loadMigrations('sqlite').map(fileName).join(', ')}`)
    expect(run.stdout).toContain('Dry run: nothing was changed.')
    expect(existsSync(join(cwd, 'journal.db'))).toBe(false)
  })

  it('installs, then finds nothing to do; --json returns the report', async () => {
    const cwd = folder(SQLITE)
    const first = await interlock(['install'], { cwd })
    expect(first.code).toBe(0)
    expect(first.stdout).toContain(`Applied: ${fileName(loadMigrations('sqlite')[0]!)}`)
    const second = await interlock(['install', '--json'], { cwd })
    expect(second.code).toBe(0)
    expect(JSON.parse(second.stdout)).toMatchObject({
      kind: 'sqlite',
      location: join(cwd, 'journal.db'),
      currentVersion: latestVersion('sqlite'),
      targetVersion: latestVersion('sqlite'),
      applied: [],
      pending: [],
    })
  })

  it('--print-grants is refused: an SQLite journal has no database roles', async () => {
    const cwd = folder(SQLITE)
    const run = await interlock(['install', '--print-grants', '--agent', 'bot'], { cwd })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--print-grants is for a PostgreSQL store')
    expect(existsSync(join(cwd, 'journal.db'))).toBe(false)
  })

  it('refuses a journal from a newer interlock: exit 4, with a hint', async () => {
    const cwd = folder(SQLITE)
    expect((await interlock(['install'], { cwd })).code).toBe(0)
    const db = new Database(join(cwd, 'journal.db'))
    db.prepare(`INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (999, 'future', 'x', 'now')`).run()
    db.close()
    const run = await interlock(['install'], { cwd })
    expect(run.code).toBe(4)
    expect(run.stderr).toContain('Error (E_SCHEMA_VERSION)')
    expect(run.stderr).toContain('newer than this interlock knows')
    expect(run.stderr).toContain('Try this: Upgrade interlock')
  })
})

describe('interlock install (PostgreSQL)', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })
  const POSTGRES = `[store]\nkind = "postgres"\nurl = "\${INTERLOCK_DATABASE_URL}"\nschema = "ops"\n`

  it('installs into the configured schema, never printing the password; --print-sql names the schema', async () => {
    const cwd = folder(POSTGRES)
    const env = { INTERLOCK_DATABASE_URL: db.url }
    const password = decodeURIComponent(new URL(db.url).password)
    const run = await interlock(['install'], { cwd, env })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('Store: PostgreSQL schema "ops"')
    expect(run.stdout).toContain('Applied: 0001_baseline.sql')
    expect(run.stdout).not.toContain(password)
    const again = await interlock(['install', '--dry-run', '--json'], { cwd, env })
    expect(JSON.parse(again.stdout)).toMatchObject({ dryRun: true, pending: [], applied: [] })
    const sql = await interlock(['install', '--print-sql'], { cwd, env })
    expect(sql.stdout).toContain('CREATE TABLE "ops".journal_records')
  })

  it('an unreachable server: exit 4, store unavailable', async () => {
    const cwd = folder(POSTGRES)
    const run = await interlock(['install'], { cwd, env: { INTERLOCK_DATABASE_URL: 'postgres://u:topsecret@127.0.0.1:1/db' } })
    expect(run.code).toBe(4)
    expect(run.stderr).toContain('E_STORE_UNAVAILABLE')
    expect(run.stderr).not.toContain('topsecret')
  })
})
