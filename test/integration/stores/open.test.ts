/** openStore: from [store] config to a ready store, schema checked, group commit in front. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SchemaVersionError } from '../../../src/core/errors.js'
import { install } from '../../../src/core/stores/migrate.js'
import { openStore } from '../../../src/core/stores/open.js'
import { SqliteStore } from '../../../src/core/stores/sqlite/store.js'
import { effect, propose, tickingClock } from '../../contract/fixtures.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

const dir = mkdtempSync(join(tmpdir(), 'interlock-open-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('openStore on SQLite', () => {
  it('needs no set-up: creates the folder and the schema, and works', async () => {
    const path = join(dir, 'fresh', 'nested', 'journal.db')
    const store = await openStore({ kind: 'sqlite', path }, { clock: tickingClock(Date.UTC(2031, 0, 1)) })
    expect(store.kind).toBe('sqlite')
    expect(existsSync(path)).toBe(true)
    const [r] = await store.append([propose(effect('t', 1))])
    expect(r!.ok && r!.record.at).toBe('2031-01-01T00:00:00.000Z')
    await store.close()
  })

  it('with autoInstall off, refuses a journal without the schema and says to run `interlock install`', async () => {
    const path = join(dir, 'no-auto.db')
    const err = await openStore({ kind: 'sqlite', path }, { autoInstall: false }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SchemaVersionError)
    expect((err as SchemaVersionError).message).toBe(`the SQLite journal ${path} has no Interlock schema installed`)
    expect((err as SchemaVersionError).hint).toContain('interlock install')
    await install({ kind: 'sqlite', path })
    await (await openStore({ kind: 'sqlite', path }, { autoInstall: false })).close()
  })

  it('wraps the store in group commit unless asked not to', async () => {
    const path = join(dir, 'bare.db')
    const wrapped = await openStore({ kind: 'sqlite', path })
    expect(wrapped).not.toBeInstanceOf(SqliteStore)
    await wrapped.close()
    const bare = await openStore({ kind: 'sqlite', path }, { groupCommit: false })
    expect(bare).toBeInstanceOf(SqliteStore)
    await bare.close()
  })
})

describe('openStore on PostgreSQL', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('does not install by default: refuses an empty schema, naming it and `interlock install`', async () => {
    const config = { kind: 'postgres' as const, url: db.url, schema: 'not_yet' }
    const err = await openStore(config).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SchemaVersionError)
    expect((err as Error).message).toMatch(/^PostgreSQL schema "not_yet" in database \w+ on 127\.0\.0\.1:\d+ has no Interlock schema installed$/)
    expect((err as SchemaVersionError).hint).toContain('interlock install')
    await install(config)
    const store = await openStore(config)
    expect(store.kind).toBe('postgres')
    expect((await store.append([propose(effect('t', 1))]))[0]!.ok).toBe(true)
    await store.close()
  })

  it('installs on open when asked', async () => {
    const store = await openStore({ kind: 'postgres', url: db.url, schema: 'auto' }, { autoInstall: true })
    expect(await store.scanInFlight()).toEqual({ effects: [], recordsRead: 0 })
    await store.close()
  })
})
