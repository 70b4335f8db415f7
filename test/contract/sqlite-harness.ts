/** Harness for the store contract on SQLite: a fresh journal file per test, tampering through a raw connection. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll } from 'vitest'
import { openSqliteStore } from '../../src/core/stores/sqlite/open.js'
import type { StoreHarness } from './store.contract.js'

const dir = mkdtempSync(join(tmpdir(), 'interlock-sqlite-contract-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

export async function sqliteHarness(): Promise<StoreHarness> {
  const file = join(dir, `journal-${++n}.db`)
  const raw = new Database(file)
  return {
    open: async (options = {}) => openSqliteStore(file, { autoInstall: true, ...options }),
    exec: async (sql, params = []) => {
      // $1..$n → named parameters, which better-sqlite3 binds by name even when repeated.
      const named = Object.fromEntries(params.map((p, i) => [`p${i + 1}`, p]))
      raw.prepare(sql.replace(/\$(\d+)/g, '@p$1')).run(named)
    },
    dispose: async () => void raw.close(),
  }
}

