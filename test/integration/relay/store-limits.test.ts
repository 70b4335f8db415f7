/**
 * The limits on the store's PostgreSQL connections ([store]
 * statement_timeout_ms, lock_timeout_ms, idle_in_transaction_timeout_ms):
 * in force on every pooled connection before its first statement, 0 leaving
 * the server's setting, and a transaction left idle (a process stopped
 * inside it) ended by the server with its locks.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../../src/core/config/load.js'
import { createPool } from '../../../src/core/stores/postgres/connect.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

async function settings(pool: pg.Pool): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ s: string; l: string; i: string }>(
    `SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l, current_setting('idle_in_transaction_session_timeout') AS i`,
  )
  return { statement: rows[0]!.s, lock: rows[0]!.l, idle: rows[0]!.i }
}

describe('store connection limits', () => {
  it('interlock.toml\'s [store] limits, or their defaults (15 s, 5 s, 10 s), are set on every pooled connection; 0 sets nothing', async () => {
    const file = (extra: string) => parseConfig(`[store]\nkind = "postgres"\nurl = "${db.url}"\n${extra}`, { file: '/tmp/interlock.toml' })
    const defaults = file('').store
    expect(defaults).toMatchObject({ statementTimeoutMs: 15_000, lockTimeoutMs: 5_000, idleInTransactionTimeoutMs: 10_000 })
    const set = file('statement_timeout_ms = 2500\nlock_timeout_ms = 0\nidle_in_transaction_timeout_ms = 60000').store
    expect(set).toMatchObject({ statementTimeoutMs: 2_500, lockTimeoutMs: 0, idleInTransactionTimeoutMs: 60_000 })

    for (const [config, expected] of [
      [defaults, { statement: '15s', lock: '5s', idle: '10s' }],
      // lock_timeout 0: the server's own setting (0, no limit, on this server) stays.
      [set, { statement: '2500ms', lock: '0', idle: '1min' }],
    ] as const) {
      if (config.kind !== 'postgres') throw new Error('postgres expected')
      const pool = createPool(db.url, { maxConnections: 3, limits: config })
      try {
        // Several connections at once: each new one gets the limits before the caller's statement.
        const all = await Promise.all([0, 1, 2].map(() => settings(pool)))
        for (const s of all) expect(s).toEqual(expected)
      } finally {
        await pool.end()
      }
    }
  })

  it('a transaction left idle past idle_in_transaction_timeout_ms loses its connection and its row locks', async () => {
    const pool = createPool(db.url, { maxConnections: 2, limits: { idleInTransactionTimeoutMs: 300 } })
    try {
      await pool.query('CREATE TABLE held (id int PRIMARY KEY)')
      await pool.query('INSERT INTO held VALUES (1)')
      const stopped = await pool.connect()
      await stopped.query('BEGIN')
      await stopped.query('SELECT * FROM held WHERE id = 1 FOR UPDATE')
      // The process "stops" here; meanwhile another writer needs the row.
      const started = Date.now()
      await pool.query('UPDATE held SET id = 2 WHERE id = 1')
      expect(Date.now() - started).toBeLessThan(5_000)
      await expect(stopped.query('COMMIT')).rejects.toThrow()
      stopped.release(true)
    } finally {
      await pool.end()
    }
  })
})
