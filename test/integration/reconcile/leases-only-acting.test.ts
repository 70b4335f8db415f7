/**
 * reconcile-effects runs from cron beside live relays: it leases only the
 * effects it will act on (leases.ts). A run with nothing to do must write
 * nothing to the shared store; a run limited to a few effects must touch no
 * row but theirs. Judged by PostgreSQL itself: a row's xmin changes with
 * every UPDATE of it, a lease taken and given back included.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../../src/core/config/types.js'
import { toEffect, type Effect } from '../../../src/core/effect.js'
import { proposal } from '../../../src/core/gate-context.js'
import { reconcileEffects } from '../../../src/core/reconcile/reconcile.js'
import { install } from '../../../src/core/stores/migrate.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'
import { journalDispatched } from '../../helpers/sqlite-gate.js'

let db: TestDatabase
let admin: pg.Client
const opened: Store[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  admin = new pg.Client({ connectionString: db.url })
  await admin.connect()
})
afterAll(async () => {
  for (const s of opened) await s.close().catch(() => {})
  await admin?.end()
  await db?.drop()
})

async function freshStore(schema: string): Promise<{ config: StoreConfig; store: Store }> {
  const config: StoreConfig = { kind: 'postgres', url: db.url, schema }
  await install(config)
  const store = await openStore(config)
  opened.push(store)
  return { config, store }
}

/** Each effect row's xmin: the transaction that last wrote it. */
async function versions(schema: string): Promise<Map<string, string>> {
  const { rows } = await admin.query<{ id: string; xmin: string }>(`SELECT id, xmin::text AS xmin FROM "${schema}".effects`)
  return new Map(rows.map((r) => [r.id, r.xmin]))
}

const effect = (n: number): Effect => toEffect({ thread: `agent-${n % 7}`, target: 't2', action: 'do', args: { n } })

describe('reconcile-effects leases only what it acts on (PostgreSQL)', () => {
  it('with a ready backlog younger than its grace period, it updates no row at all', async () => {
    const { config, store } = await freshStore('idle')
    for (let i = 0; i < 300; i += 100) {
      await store.append(
        Array.from({ length: 100 }, (_, k) => {
          const e = effect(i + k)
          return { effectId: e.id, from: null, to: 'PROPOSED' as const, data: proposal(e, 2), effect: e, tier: 2 as const }
        }),
      )
    }
    await journalDispatched(store, effect(1_000), 2)
    const before = await versions('idle')
    const t = new CountingTarget('t2', 2)
    const result = await reconcileEffects({ store, storeConfig: config, targets: [t], olderThanMs: 300_000, concurrency: 2, retry: { maxAttempts: 2, backoffMs: 1 } })
    expect(result.status).toBe('clean')
    expect(before.size).toBe(301)
    expect(await versions('idle')).toEqual(before)
    expect(t.queries).toEqual([])
  })

  it('limited to one effect, it leases and moves that one and leaves every other row as it was', async () => {
    const { config, store } = await freshStore('limited')
    const ids: string[] = []
    for (let n = 0; n < 5; n++) {
      const e = effect(n)
      await journalDispatched(store, e, 2)
      ids.push(e.id)
    }
    const before = await versions('limited')
    const t = new CountingTarget('t2', 2)
    const result = await reconcileEffects({ store, storeConfig: config, targets: [t], olderThanMs: 0, limit: 1, concurrency: 1, retry: { maxAttempts: 2, backoffMs: 1 } })
    const after = await versions('limited')
    const changed = ids.filter((id) => after.get(id) !== before.get(id))
    expect(changed).toHaveLength(1)
    expect((await store.get(changed[0]!))!.state).toBe('COMMITTED')
    expect(t.count(changed[0]!)).toBe(1)
    for (const id of ids.filter((i) => i !== changed[0])) expect((await store.get(id))!.state).toBe('DISPATCHED')
    expect(result.status).not.toBe('refused')
  })
})
