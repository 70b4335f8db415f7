/**
 * A real store of each kind for outbox tests, with a raw connection that
 * reads and rewrites the journal_records table (and runs any statement on
 * the effects and journals tables) behind the store's back, as someone
 * tampering with the database would.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { StoreConfig } from '../../src/core/config/types.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import { quoteSchema } from '../../src/core/stores/postgres/identifier.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTestDatabase, type TestDatabase } from './pg.js'

/** One journal_records row, data as its stored text. */
export interface RawRecord {
  journal: string
  seq: number
  effect_id: string
  state: string
  at: string
  data: string
  prev_hash: string
  hash: string
}

export interface OutboxHarness {
  config: StoreConfig
  open(): Promise<Store>
  rows(): Promise<RawRecord[]>
  /** Replaces every journal record with `rows`, changing nothing else (effects, heads). */
  rewrite(rows: RawRecord[]): Promise<void>
  /** Runs one statement on the raw connection; `?` placeholders on both kinds. */
  exec(sql: string, params?: unknown[]): Promise<void>
  dispose(): Promise<void>
}

const COLUMNS = 'journal, seq, effect_id, state, at, data, prev_hash, hash'

/** `path`: an SQLite journal a test made already (an interlock.toml's), instead of a fresh one. */
export async function sqliteOutbox(path = join(mkdtempSync(join(tmpdir(), 'interlock-outbox-')), 'journal.db')): Promise<OutboxHarness> {
  const config: StoreConfig = { kind: 'sqlite', path }
  await install(config)
  const raw = new Database(path)
  return {
    config,
    open: () => openStore(config),
    rows: async () => raw.prepare(`SELECT ${COLUMNS} FROM journal_records ORDER BY journal, seq`).all() as RawRecord[],
    rewrite: async (rows) => {
      raw.transaction(() => {
        raw.prepare('DELETE FROM journal_records').run()
        const insert = raw.prepare(`INSERT INTO journal_records (${COLUMNS}) VALUES (@journal, @seq, @effect_id, @state, @at, @data, @prev_hash, @hash)`)
        for (const r of rows) insert.run(r)
      })()
    },
    exec: async (sql, params = []) => void raw.prepare(sql).run(...params),
    dispose: async () => void raw.close(),
  }
}

let db: TestDatabase | undefined
let schemas = 0

export async function postgresOutbox(): Promise<OutboxHarness> {
  db ??= await createTestDatabase()
  const schema = `outbox_${++schemas}`
  const config: StoreConfig = { kind: 'postgres', url: db.url, schema }
  await install(config)
  const raw = new pg.Client({ connectionString: db.url })
  await raw.connect()
  await raw.query(`SET search_path TO ${quoteSchema(schema)}`)
  return {
    config,
    open: () => openStore(config),
    rows: async () =>
      (await raw.query(`SELECT ${COLUMNS} FROM journal_records ORDER BY journal, seq`)).rows.map((r: RawRecord) => ({ ...r, seq: Number(r.seq) })),
    rewrite: async (rows) => {
      await raw.query('BEGIN')
      await raw.query('DELETE FROM journal_records')
      for (const r of rows) {
        await raw.query(`INSERT INTO journal_records (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [r.journal, r.seq, r.effect_id, r.state, r.at, r.data, r.prev_hash, r.hash])
      }
      await raw.query('COMMIT')
    },
    exec: async (sql, params = []) => {
      let n = 0
      await raw.query(sql.replace(/\?/g, () => `$${++n}`), params)
    },
    dispose: async () => {
      await raw.query(`DROP SCHEMA ${quoteSchema(schema)} CASCADE`)
      await raw.end()
    },
  }
}

export async function dropOutboxDatabase(): Promise<void> {
  await db?.drop()
  db = undefined
}
