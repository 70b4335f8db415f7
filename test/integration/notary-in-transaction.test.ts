/**
 * performInTransaction on the embedded PostgreSQL: the service's change and
 * its claim/performed lines commit together; a change that throws leaves
 * neither; a repeated attempt is answered with its recorded result; an
 * aborted attempt is refused with 409 and changes nothing.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { sha256Hex } from '../../src/core/hash.js'
import { installNotaryTables, performInTransaction } from '../../src/core/notary/in-transaction.js'
import { notaryLog, type NotaryLog } from '../../src/core/notary/log.js'
import type { Queryable } from '../../src/core/notary/postgres/pg-notary-schema.js'
import { openPostgresNotaryStore } from '../../src/core/notary/postgres/pg-notary-store.js'
import { signRecord } from '../../src/core/notary/records.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

const agent = generateKeyPair('relay', 'agent-1')
const service = generateKeyPair('service', 'payments')
const trusted = { agents: { 'agent-1': agent.publicKey }, services: { payments: service.publicKey } }
const opts = { service: 'payments', key: service, schema: 'svc_notary' }

let db: TestDatabase
let client: pg.Client
let log: NotaryLog
beforeAll(async () => {
  db = await createTestDatabase()
  client = new pg.Client({ connectionString: db.url })
  await client.connect()
  await client.query('CREATE TABLE charges (id serial PRIMARY KEY, effect text NOT NULL)')
  await installNotaryTables(client, 'svc_notary')
  log = notaryLog(await openPostgresNotaryStore({ url: db.url, schema: 'svc_notary', install: false }), trusted)
})
afterAll(async () => {
  await log?.close()
  await client?.end()
  await db?.drop()
})

const charge = (effect: string) => async (c: Queryable) => {
  const { rows } = await c.query('INSERT INTO charges (effect) VALUES ($1) RETURNING id', [effect])
  return { status: 201, body: { id: (rows[0] as { id: number }).id } }
}
const count = async (effect: string) => Number((await client.query('SELECT count(*) AS n FROM charges WHERE effect = $1', [effect])).rows[0].n)

describe('performInTransaction', () => {
  it('commits the change with claim and performed; the same attempt again is answered from the record without a second change', async () => {
    const effect = sha256Hex(`in-tx-ok-${Math.random()}`)
    const first = await performInTransaction(client, opts, { effect, attempt: 1 }, charge(effect))
    expect(first).toMatchObject({ status: 201, replayed: false })
    const again = await performInTransaction(client, opts, { effect, attempt: 1 }, charge(effect))
    expect(again).toEqual({ ...first, replayed: true })
    expect(await count(effect)).toBe(1)
    expect((await log.attempt(effect, 1)).state).toBe('PERFORMED')
    expect(await log.verify(effect)).toEqual([])
  })

  it('a change that throws rolls back the claim too: no charge, no line, and the attempt can still be aborted by the agent', async () => {
    const effect = sha256Hex(`in-tx-throw-${Math.random()}`)
    await expect(
      performInTransaction(client, opts, { effect, attempt: 1 }, async (c) => {
        await charge(effect)(c)
        throw new Error('card declined downstream')
      }),
    ).rejects.toThrow('card declined downstream')
    expect(await count(effect)).toBe(0)
    expect((await log.effect(effect)).attempts).toEqual([])
    const abort = signRecord({ effect, attempt: 1, kind: 'abort', writer: 'agent-1', at: new Date().toISOString(), body: {}, prev: (await log.effect(effect)).head }, agent)
    expect((await log.write(abort)).status).toBe('written')
  })

  it('an attempt the agent aborted is refused with 409 aborted, and its change is never made', async () => {
    const effect = sha256Hex(`in-tx-aborted-${Math.random()}`)
    const abort = signRecord({ effect, attempt: 1, kind: 'abort', writer: 'agent-1', at: new Date().toISOString(), body: {}, prev: (await log.effect(effect)).head }, agent)
    expect((await log.write(abort)).status).toBe('written')
    let ran = false
    const answer = await performInTransaction(client, opts, { effect, attempt: 1 }, async (c) => {
      ran = true
      return charge(effect)(c)
    })
    expect(answer).toMatchObject({ status: 409, body: { error: 'aborted' }, replayed: false })
    expect(ran).toBe(false)
    expect(await count(effect)).toBe(0)
  })
})
