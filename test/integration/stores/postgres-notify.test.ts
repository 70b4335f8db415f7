/**
 * Where the PostgreSQL store notifies. PostgreSQL serialises the commits of
 * all transactions that issued NOTIFY, WAL flush included, under one lock for
 * the whole cluster (bench/relay/notify-lock.ts). So a batch's records are
 * written by a transaction that notifies nothing, and its listeners are told
 * after the commit, by a statement of their own; a single append (a
 * sequential caller) still notifies within its commit.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { install } from '../../../src/core/stores/migrate.js'
import { createPool } from '../../../src/core/stores/postgres/connect.js'
import { PostgresStore } from '../../../src/core/stores/postgres/store.js'
import { effect, move, propose } from '../../contract/fixtures.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

interface Sent {
  text: string
  values: unknown[]
}

/** A store whose pooled connections record every statement they send. */
async function recordingStore(schema: string): Promise<{ store: PostgresStore; sent: Sent[] }> {
  await install({ kind: 'postgres', url: db.url, schema })
  const pool = createPool(db.url)
  const sent: Sent[] = []
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>
  const recording = new WeakSet<pg.PoolClient>()
  ;(pool as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
    const client = await connect()
    // A pooled connection comes back on later checkouts: record through it once.
    if (recording.has(client)) return client
    recording.add(client)
    const query = client.query.bind(client) as (q: unknown, v?: unknown[]) => Promise<unknown>
    ;(client as { query: unknown }).query = (q: unknown, v?: unknown[]) => {
      const config = typeof q === 'string' ? { text: q, values: v } : (q as { text: string; values?: unknown[] })
      sent.push({ text: config.text, values: config.values ?? v ?? [] })
      return query(q, v)
    }
    return client
  }
  return { store: new PostgresStore(pool, schema, { url: db.url }), sent }
}

async function listen(): Promise<{ heard: { channel: string; payload?: string }[]; end(): Promise<void> }> {
  const c = new pg.Client({ connectionString: db.url })
  await c.connect()
  const heard: { channel: string; payload?: string }[] = []
  c.on('notification', (n) => heard.push({ channel: n.channel, payload: n.payload }))
  await c.query('LISTEN interlock_ready; LISTEN interlock_settled')
  return { heard, end: () => c.end() }
}

const settle = () => new Promise((r) => setTimeout(r, 200))

describe('PostgreSQL notifications', () => {
  it("a batch's records are written by a transaction that notifies nothing; its listeners are told after the commit", async () => {
    const { store, sent } = await recordingStore('notify_batch')
    const listener = await listen()
    const [a, b] = [effect('t', 1), effect('t', 2)]
    const proposed = await store.append([propose(a), propose(b)])
    expect(proposed.every((r) => r.ok)).toBe(true)
    await settle()
    const writes = sent.filter((s) => /\.append(_chains|_step)?\(/.test(s.text))
    expect(writes).toHaveLength(1)
    // The channel column (12th parameter) names no channel: the write itself issues no NOTIFY.
    expect(writes[0]!.values[11]).toEqual([null, null])
    const notifies = sent.filter((s) => s.text.includes('pg_notify'))
    expect(notifies).toEqual([{ text: expect.stringContaining('pg_notify'), values: [['interlock_ready'], 'notify_batch'] }])
    expect(sent.indexOf(notifies[0]!)).toBeGreaterThan(sent.indexOf(writes[0]!))
    expect(listener.heard).toEqual([{ channel: 'interlock_ready', payload: 'notify_batch' }])

    // Chains left DISPATCHED wake nobody; outcomes wake those waiting for them, once per batch.
    sent.length = 0
    listener.heard.length = 0
    const chain = (e: typeof a) => [move(e, 'PROPOSED', 'AUTHORIZED'), { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true }]
    expect((await store.append([...chain(a), ...chain(b)])).every((r) => r.ok)).toBe(true)
    expect((await store.append([move(a, 'DISPATCHED', 'COMMITTED'), move(b, 'DISPATCHED', 'FAILED')])).every((r) => r.ok)).toBe(true)
    await settle()
    expect(sent.filter((s) => s.text.includes('pg_notify')).map((s) => s.values)).toEqual([[['interlock_settled'], 'notify_batch']])
    expect(listener.heard).toEqual([{ channel: 'interlock_settled', payload: 'notify_batch' }])
    await listener.end()
    await store.close()
  })

  it("one effect's append (a sequential caller's) notifies at its own commit", async () => {
    const { store, sent } = await recordingStore('notify_one')
    const listener = await listen()
    const [r] = await store.append([propose(effect('t', 1))])
    expect(r!.ok).toBe(true)
    await settle()
    expect(sent.filter((s) => s.text.includes('pg_notify'))).toEqual([])
    expect(sent.filter((s) => s.text.includes('.append_step(')).map((s) => s.values[11])).toEqual(['interlock_ready'])
    expect(listener.heard).toEqual([{ channel: 'interlock_ready', payload: 'notify_one' }])
    await listener.end()
    await store.close()
  })

  it("one effect's chain wakes the listeners of the state it leaves the effect in, at its commit", async () => {
    const { store, sent } = await recordingStore('notify_chain')
    const listener = await listen()
    const [a, b] = [effect('t', 1), effect('t', 2)]
    const gateChain = (e: typeof a, last: 'DISPATCHED' | 'REJECTED') => [
      propose(e),
      { ...move(e, 'PROPOSED', 'AUTHORIZED'), chained: true },
      { ...move(e, 'AUTHORIZED', last), chained: true },
    ]
    // PROPOSED and AUTHORIZED, chained on to DISPATCHED in the same commit, were never ready for a relay.
    expect((await store.append(gateChain(a, 'DISPATCHED'))).every((r) => r.ok)).toBe(true)
    expect((await store.append(gateChain(b, 'REJECTED'))).every((r) => r.ok)).toBe(true)
    await settle()
    expect(sent.filter((s) => s.text.includes('.append_chain(')).map((s) => s.values[11])).toEqual([[], ['interlock_settled']])
    expect(sent.filter((s) => s.text.includes('pg_notify'))).toEqual([])
    expect(listener.heard).toEqual([{ channel: 'interlock_settled', payload: 'notify_chain' }])
    await listener.end()
    await store.close()
  })

  it('a batch that wrote nothing notifies nothing', async () => {
    const { store, sent } = await recordingStore('notify_lost')
    const listener = await listen()
    const [a, b] = [effect('t', 1), effect('t', 2)]
    // Neither exists: both moves lose.
    const results = await store.append([move(a, 'PROPOSED', 'AUTHORIZED'), move(b, 'PROPOSED', 'AUTHORIZED')])
    expect(results.map((r) => r.ok)).toEqual([false, false])
    await settle()
    expect(sent.filter((s) => s.text.includes('pg_notify'))).toEqual([])
    expect(listener.heard).toEqual([])
    await listener.end()
    await store.close()
  })
})
