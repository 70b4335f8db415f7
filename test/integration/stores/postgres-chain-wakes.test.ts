/**
 * A batch append on PostgreSQL wakes the listeners of the state each effect
 * is left in, whichever way the batch went: a batch of several effects
 * notifies after its commit, in a statement of its own; one effect's (two
 * callers' chains of it joined by group commit) notifies inside its commit
 * (src/core/stores/postgres/append.ts). A relay must not sleep through an
 * effect left AUTHORIZED or PROPOSED: the `interlock_ready` channel.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Effect } from '../../../src/core/effect.js'
import { install } from '../../../src/core/stores/migrate.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { AppendRequest, Store } from '../../../src/core/stores/store.js'
import { drive, effect, move, propose } from '../../contract/fixtures.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

let db: TestDatabase
let listener: pg.Client
const heard: { channel: string; payload?: string }[] = []
beforeAll(async () => {
  db = await createTestDatabase()
  listener = new pg.Client({ connectionString: db.url })
  await listener.connect()
  listener.on('notification', (m) => heard.push({ channel: m.channel, payload: m.payload }))
  await listener.query('LISTEN interlock_ready; LISTEN interlock_settled')
})
afterAll(async () => {
  await listener?.end()
  await db?.drop()
})

let n = 0
async function fresh(): Promise<{ schema: string; store: Store }> {
  const schema = `wakes_${++n}`
  await install({ kind: 'postgres', url: db.url, schema })
  return { schema, store: await openStore({ kind: 'postgres', url: db.url, schema }) }
}

const chained = (r: AppendRequest): AppendRequest => ({ ...r, chained: true })

/** The channels heard for `schema` once `settle` ms have passed with nothing new (the post-commit notify is not awaited). */
async function channelsHeard(schema: string, settle = 300): Promise<string[]> {
  let count = -1
  while (count !== heard.length) {
    count = heard.length
    await new Promise((r) => setTimeout(r, settle))
  }
  const out = heard.filter((h) => h.payload === schema).map((h) => h.channel)
  heard.length = 0
  return [...new Set(out)].sort()
}

describe('PostgreSQL batch appends wake the listeners of the state each effect is left in', () => {
  it('a relay-style batch of several effects, one left AUTHORIZED (returned) among chains through to DISPATCHED, wakes the ready channel after its commit', async () => {
    const { schema, store } = await fresh()
    const [x, y, z] = [effect('w1', 1), effect('w1', 2), effect('w2', 3)]
    await drive(store, x, 'PROPOSED')
    await drive(store, y, 'DISPATCHED')
    await drive(store, z, 'PROPOSED')
    await channelsHeard(schema)
    const results = await store.append([
      move(x, 'PROPOSED', 'AUTHORIZED'),
      chained(move(x, 'AUTHORIZED', 'DISPATCHED')),
      move(y, 'DISPATCHED', 'AUTHORIZED', { returned: true }),
      move(z, 'PROPOSED', 'AUTHORIZED'),
      chained(move(z, 'AUTHORIZED', 'DISPATCHED')),
    ])
    expect(results.every((r) => r.ok)).toBe(true)
    expect(await channelsHeard(schema)).toEqual(['interlock_ready'])
    // The same batch with nothing left ready wakes no relay: AUTHORIZED chained on to DISPATCHED was never ready.
    const [u, v] = [effect('w1', 4), effect('w2', 5)]
    await drive(store, u, 'PROPOSED')
    await drive(store, v, 'PROPOSED')
    await channelsHeard(schema)
    await store.append([...[u, v].flatMap((e) => [move(e, 'PROPOSED', 'AUTHORIZED'), chained(move(e, 'AUTHORIZED', 'DISPATCHED'))])])
    expect(await channelsHeard(schema)).toEqual([])
    await store.close()
  })

  it("two callers' chains of one effect joined in one batch, the effect left where the last written chain leaves it wakes that state's channel; a lost chain's states wake nothing", async () => {
    const { schema, store } = await fresh()
    const e: Effect = effect('w3', 1)
    await drive(store, e, 'PROPOSED')
    await channelsHeard(schema)
    // Same tick, same store: group commit makes them one append_chains() call.
    const [first, second] = await Promise.all([
      store.append([move(e, 'PROPOSED', 'AUTHORIZED'), chained(move(e, 'AUTHORIZED', 'DISPATCHED'))]),
      store.append([move(e, 'DISPATCHED', 'AUTHORIZED', { returned: true }), chained(move(e, 'AUTHORIZED', 'HELD'))]),
    ])
    expect([...first!, ...second!].map((r) => r.ok)).toEqual([true, true, true, true])
    // Left HELD (waiting for operators: the settled channel); its AUTHORIZED, chained on, was never ready.
    expect(await channelsHeard(schema)).toEqual(['interlock_settled'])
    const f: Effect = effect('w3', 2)
    await store.append([propose(f, 1)])
    await channelsHeard(schema)
    const [lost, won] = await Promise.all([
      store.append([move(f, 'AUTHORIZED', 'REJECTED', { violations: ['stale'] })]),
      store.append([move(f, 'PROPOSED', 'AUTHORIZED'), chained(move(f, 'AUTHORIZED', 'DISPATCHED'))]),
      store.append([move(f, 'DISPATCHED', 'AUTHORIZED', { returned: true })]),
    ]).then(([a, b, c]) => [a!, [...b!, ...c!]])
    expect(lost!.map((r) => r.ok)).toEqual([false])
    expect(won!.map((r) => r.ok)).toEqual([true, true, true])
    expect((await store.get(f.id))?.state).toBe('AUTHORIZED')
    expect(await channelsHeard(schema)).toEqual(['interlock_ready'])
    await store.close()
  })
})
