/** The store contract on SQLite, plus what only SQLite has: the durability pragmas and several processes on one file. */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { StoreError } from '../../src/core/errors.js'
import { ChainVerifier } from '../../src/core/stores/record-hash.js'
import { applyDurabilityPragmas, openSqlite, type PragmaConnection } from '../../src/core/stores/sqlite/connection.js'
import { openSqliteStore } from '../../src/core/stores/sqlite/open.js'
import { allRecords } from './fixtures.js'
import { sqliteHarness } from './sqlite-harness.js'
import { leaseContract } from './lease.contract.js'
import { pruneContract } from './prune.contract.js'
import { storeContract } from './store.contract.js'

const dir = mkdtempSync(join(tmpdir(), 'interlock-sqlite-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

storeContract('SQLite', sqliteHarness)
leaseContract('SQLite', sqliteHarness)
pruneContract('SQLite', sqliteHarness)

describe('SQLite durability settings', () => {
  it('opens in WAL mode with synchronous=FULL', () => {
    const db = openSqlite(join(dir, 'pragmas.db'))
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.pragma('synchronous', { simple: true })).toBe(2)
    expect(db.pragma('busy_timeout', { simple: true })).toBe(10_000)
    db.close()
  })

  it('refuses a connection where synchronous does not read back FULL', () => {
    // A driver that accepts the setting but keeps NORMAL (1), as a build or a VFS might.
    const fake: PragmaConnection = {
      pragma: (source) => (source.startsWith('journal_mode') ? 'wal' : source === 'synchronous' ? 1 : undefined),
    }
    expect(() => applyDurabilityPragmas(fake, '/x/journal.db')).toThrow(StoreError)
    expect(() => applyDurabilityPragmas(fake, '/x/journal.db')).toThrow(/synchronous=FULL.*reads back 1/)
  })

  it('refuses a journal that cannot be put in WAL mode', () => {
    const fake: PragmaConnection = { pragma: (source) => (source.startsWith('journal_mode') ? 'delete' : 2) }
    expect(() => applyDurabilityPragmas(fake, '/x/journal.db')).toThrow(/journal mode delete, not WAL/)
  })

  it('accepts FULL read back from a real connection through the same check', () => {
    const db = new Database(join(dir, 'check.db'))
    expect(() => applyDurabilityPragmas(db, join(dir, 'check.db'))).not.toThrow()
    db.close()
  })

  it('names the file when it cannot be opened', () => {
    const notAFolder = join(dir, 'plain-file')
    writeFileSync(notAFolder, '')
    const file = join(notAFolder, 'journal.db')
    expect(() => openSqlite(file)).toThrow(StoreError)
    expect(() => openSqlite(file)).toThrow(`cannot open the SQLite journal ${file}`)
  })
})

describe('SQLite: several processes on one journal file', () => {
  it('keeps one whole chain when two processes append at once (BEGIN IMMEDIATE, head read inside)', async () => {
    const file = join(dir, 'multi-process.db')
    openSqliteStore(file, { autoInstall: true }).close()
    const writer = join(import.meta.dirname, '..', 'helpers', 'sqlite-writer.ts')
    const start = (name: string) => {
      const child = spawn(process.execPath, ['--import', 'tsx', writer, file, name, '60'], { stdio: ['pipe', 'pipe', 'pipe'] })
      let err = ''
      child.stderr.on('data', (d) => (err += d))
      const ready = once(child.stdout, 'data')
      const done = new Promise<void>((resolve, reject) =>
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer ${name} exited ${code}: ${err}`)))),
      )
      return { child, ready, done }
    }
    const writers = [start('a'), start('b')]
    await Promise.all(writers.map((w) => w.ready))
    for (const w of writers) w.child.stdin.end('go\n')
    await Promise.all(writers.map((w) => w.done))
    const store = openSqliteStore(file, { autoInstall: false })
    const records = await allRecords(store)
    // 60 effects per writer, 4 records each, all in the one shared journal.
    expect(records).toHaveLength(2 * 60 * 4)
    const verifier = new ChainVerifier()
    for (const r of records) verifier.check(r)
    expect(await store.scanInFlight()).toEqual({ effects: [], recordsRead: 0 })
    // The writers really overlapped: their records alternate in the chain, not one block after the other.
    const by = records.filter((r) => r.state === 'COMMITTED').map((r) => (r.data.receipt as { by: string }).by)
    const switches = by.filter((w, i) => i > 0 && w !== by[i - 1]).length
    expect(switches).toBeGreaterThan(1)
    await store.close()
  })
})
