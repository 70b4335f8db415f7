/**
 * The notary log's contract on PostgreSQL (the embedded server; a database of
 * its own for this file, a schema of its own per store name), plus what only
 * PostgreSQL has: the schema installed by the notary itself, and two
 * connections racing claim and abort on one attempt.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { sha256Hex } from '../../src/core/hash.js'
import { openPostgresNotaryStore } from '../../src/core/notary/postgres/pg-notary-store.js'
import { GENESIS, recordHash, signRecord } from '../../src/core/notary/records.js'
import type { NotaryStore } from '../../src/core/notary/store.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { notaryLogContract } from './notary-log.contract.js'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

const schemaOf = (name: string) => `notary_${name.replace(/[^a-z0-9]/g, '_')}`
const opened: NotaryStore[] = []

notaryLogContract('postgres', {
  open: async (name) => openPostgresNotaryStore({ url: db.url, schema: schemaOf(name), maxConnections: 4 }),
  reopen: async (name) => openPostgresNotaryStore({ url: db.url, schema: schemaOf(name), maxConnections: 4 }),
  tamper: async (name, effect, seq, body) => {
    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    await c.query(`UPDATE ${schemaOf(name)}.notary_records SET body = $1 WHERE effect = $2 AND seq = $3`, [JSON.stringify(body), effect, seq])
    await c.end()
  },
  insert: async (name, r) => {
    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    await c.query(
      `INSERT INTO ${schemaOf(name)}.notary_records (effect, seq, attempt, kind, writer, at, body, prev, signature, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [r.effect, r.seq, r.attempt, r.kind, r.writer, r.at, JSON.stringify(r.body), r.prev, r.signature, r.hash],
    )
    await c.end()
  },
  remove: async (name, effect, seq) => {
    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    await c.query(`DELETE FROM ${schemaOf(name)}.notary_records WHERE effect = $1 AND seq = $2`, [effect, seq])
    await c.end()
  },
})

describe('notary log on postgres: what only PostgreSQL has', () => {
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()))
  })

  it('installs its own schema (default interlock_notary) and tables on open, and opening again changes nothing', async () => {
    const a = await openPostgresNotaryStore({ url: db.url })
    const b = await openPostgresNotaryStore({ url: db.url })
    opened.push(a, b)
    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    const { rows } = await c.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'interlock_notary' ORDER BY table_name")
    await c.end()
    expect(rows.map((r: { table_name: string }) => r.table_name)).toEqual(['notary_decisions', 'notary_records'])
  })

  it('claim and abort appended after the same head on two stores (two pools) at once: exactly one decision is stored', async () => {
    const agent = generateKeyPair('relay', 'agent-1')
    const service = generateKeyPair('relay', 'svc')
    const one = await openPostgresNotaryStore({ url: db.url, schema: 'notary_race2' })
    const two = await openPostgresNotaryStore({ url: db.url, schema: 'notary_race2' })
    opened.push(one, two)
    for (let i = 0; i < 20; i++) {
      const e = sha256Hex(`pg-race-${i}-${Math.random()}`)
      const claim = signRecord({ effect: e, attempt: 1, kind: 'claim', writer: 'svc', at: new Date().toISOString(), body: {}, prev: GENESIS }, service)
      const abort = signRecord({ effect: e, attempt: 1, kind: 'abort', writer: 'agent-1', at: new Date().toISOString(), body: {}, prev: GENESIS }, agent)
      const results = await Promise.all([one.append({ ...claim, seq: 1, hash: recordHash(claim) }), two.append({ ...abort, seq: 1, hash: recordHash(abort) })])
      expect(results.filter((r) => r === 'appended')).toHaveLength(1)
      expect(await one.chain(e)).toHaveLength(1)
    }
  })

  it('refuses a schema name that is not a plain lowercase identifier before touching the database', async () => {
    await expect(openPostgresNotaryStore({ url: db.url, schema: 'x;drop' })).rejects.toThrow(/not a valid schema name/)
  })
})
