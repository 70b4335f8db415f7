/**
 * The store contract on PostgreSQL (a database of its own for this file, a
 * schema of its own per test), plus what only PostgreSQL has: schema names,
 * and connection failures that must surface as StoreUnavailableError.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, SchemaVersionError, StoreUnavailableError } from '../../src/core/errors.js'
import { install } from '../../src/core/stores/migrate.js'
import { createPool } from '../../src/core/stores/postgres/connect.js'
import { quoteSchema } from '../../src/core/stores/postgres/identifier.js'
import { openPostgresStore } from '../../src/core/stores/postgres/open.js'
import { PostgresStore } from '../../src/core/stores/postgres/store.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { drive, effect, move, propose } from './fixtures.js'
import { leaseContract } from './lease.contract.js'
import { pruneContract } from './prune.contract.js'
import { storeContract, type StoreHarness } from './store.contract.js'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

let n = 0
async function postgresHarness(): Promise<StoreHarness> {
  const schema = `contract_${++n}`
  const config = { kind: 'postgres' as const, url: db.url, schema }
  await install(config)
  const raw = new pg.Client({ connectionString: db.url })
  await raw.connect()
  await raw.query(`SET search_path TO ${quoteSchema(schema)}`)
  return {
    open: (options = {}) => openPostgresStore(config, { autoInstall: false, maxConnections: 4, ...options }),
    exec: async (sql, params = []) => void (await raw.query(sql, params)),
    dispose: async () => {
      await raw.query(`DROP SCHEMA ${quoteSchema(schema)} CASCADE`)
      await raw.end()
    },
  }
}

storeContract('PostgreSQL', postgresHarness)
leaseContract('PostgreSQL', postgresHarness)
pruneContract('PostgreSQL', postgresHarness)

describe('PostgreSQL: schema names', () => {
  it.each(['Interlock', 'a-b', '1abc', 'x;drop table y', '', 'a'.repeat(64), 'interlock"'])('refuses %j before touching the database', async (schema) => {
    await expect(openPostgresStore({ kind: 'postgres', url: db.url, schema }, { autoInstall: true })).rejects.toBeInstanceOf(ConfigError)
  })

  it('quotes a valid name', () => {
    expect(quoteSchema('interlock_2')).toBe('"interlock_2"')
  })
})

describe('PostgreSQL: an unreachable or failing database is unavailable, never a silent success', () => {
  it('a server that is not there: StoreUnavailableError on open', async () => {
    const err = await openPostgresStore({ kind: 'postgres', url: 'postgres://nobody:secret@127.0.0.1:1/none', schema: 'interlock' }, { autoInstall: false }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StoreUnavailableError)
    expect((err as Error).message).not.toContain('secret')
  })

  it('a server that goes away: appends reject with StoreUnavailableError', async () => {
    const pool = createPool('postgres://nobody:secret@127.0.0.1:1/none', { connectTimeoutMs: 2000 })
    const store = new PostgresStore(pool, 'interlock')
    await expect(store.append([propose(effect('t1', 1))])).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(store.scanInFlight()).rejects.toBeInstanceOf(StoreUnavailableError)
    await store.close()
  })

  it('a backend terminated mid-append (waiting on the journal lock): StoreUnavailableError, nothing written', async () => {
    const h = await postgresHarness()
    const store = await h.open()
    const e = effect('locked', 1)
    await drive(store, e, 'AUTHORIZED')
    // Hold the journal's head lock from another session so the append waits inside its transaction.
    const holder = new pg.Client({ connectionString: db.url })
    await holder.connect()
    await holder.query('BEGIN')
    await holder.query(`SELECT 1 FROM contract_${n}.journals WHERE journal = 'locked' FOR UPDATE`)
    const append = store.append([move(e, 'AUTHORIZED', 'DISPATCHED')])
    const settled = append.catch((x: unknown) => x)
    let pid: number | undefined
    for (let i = 0; i < 100 && pid === undefined; i++) {
      const { rows } = await holder.query(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
      )
      pid = rows[0]?.pid
      if (pid === undefined) await new Promise((r) => setTimeout(r, 20))
    }
    expect(pid).toBeDefined()
    await holder.query('SELECT pg_terminate_backend($1)', [pid])
    await holder.query('ROLLBACK')
    await holder.end()
    const err = await settled
    expect(err).toBeInstanceOf(StoreUnavailableError)
    expect((await store.get(e.id))?.state).toBe('AUTHORIZED')
    // The pool dropped the dead connection: the store works again.
    expect((await store.append([move(e, 'AUTHORIZED', 'DISPATCHED')]))[0]!.ok).toBe(true)
    await store.close()
    await h.dispose()
  })

  it('a schema that is not installed is refused by name, pointing at `interlock install`', async () => {
    const err = await openPostgresStore({ kind: 'postgres', url: db.url, schema: 'never_installed' }, { autoInstall: false }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SchemaVersionError)
    expect((err as SchemaVersionError).message).toContain('PostgreSQL schema "never_installed"')
    expect((err as SchemaVersionError).hint).toContain('interlock install')
  })
})
