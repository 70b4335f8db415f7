/**
 * A batch holding chains, as group commit joins several callers' and a relay
 * sends its claimed batch, answers alike on SQLite (the in-memory planner,
 * append-plan.ts) and on PostgreSQL (append_chains(),
 * schemas/postgres/0004_append_chain.sql): which requests are written, what
 * a loser is told, and the records each journal holds afterwards. The store
 * contract says the two stores behave alike; these are the batches where
 * the set-based function could part from the planner: two chains of one
 * effect, a chain whose first state loses though a later one alone would
 * pass, a stale fencing token in the middle of a chain (which the planner
 * once wrote the first half of), a proposal twice, a proposal then a move
 * of it, unchained.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { install } from '../../../src/core/stores/migrate.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { AppendRequest, AppendResult, Lease, Store } from '../../../src/core/stores/store.js'
import { allRecords, drive, effect, move, propose, tickingClock } from '../../contract/fixtures.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

let db: TestDatabase
const dir = mkdtempSync(join(tmpdir(), 'interlock-chain-alike-'))
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
  rmSync(dir, { recursive: true, force: true })
})

let n = 0
async function both(): Promise<Record<'sqlite' | 'postgres', Store>> {
  const schema = `alike_${++n}`
  await install({ kind: 'postgres', url: db.url, schema })
  // No group commit: each batch is exactly the one given.
  const options = { groupCommit: false, clock: tickingClock() } as const
  return {
    sqlite: await openStore({ kind: 'sqlite', path: join(dir, `${schema}.db`) }, options),
    postgres: await openStore({ kind: 'postgres', url: db.url, schema }, { ...options, clock: tickingClock() }),
  }
}

const chained = (r: AppendRequest): AppendRequest => ({ ...r, chained: true })
const leased = (r: AppendRequest, lease: Lease): AppendRequest => ({ ...r, lease })

/** What a store told each request (a loser: its effect as the requests before it left it), and what its journals hold: everything but times, hashes and lease tokens. */
async function run(store: Store, batch: (leases: Map<string, Lease>) => AppendRequest[], setup: (store: Store) => Promise<void>): Promise<unknown> {
  await setup(store)
  const leases = new Map((await store.claim({ relay: 'r1', limit: 100, leaseMs: 60_000 })).map((c) => [c.snapshot.effect.id, c.lease]))
  const told = (await store.append(batch(leases))).map((r: AppendResult) =>
    r.ok ? ['written', r.record.journal, r.record.seq, r.record.state] : ['lost', r.current?.state ?? null, r.current?.seq ?? null, r.current?.detail ?? null],
  )
  const records = (await allRecords(store)).map((r) => [r.journal, r.seq, r.effectId.slice(0, 8), r.state, r.data])
  return { told, records }
}

describe('a batch holding chains answers alike on SQLite and PostgreSQL', () => {
  const [e, f, g, h] = [effect('a1', 1), effect('a1', 2), effect('a2', 3), effect('a2', 4)]
  const setup = async (store: Store) => {
    await drive(store, e, 'PROPOSED', 1)
    await drive(store, f, 'AUTHORIZED', 1)
    await drive(store, g, 'PROPOSED', 1)
  }
  const cases: [string, (leases: Map<string, Lease>) => AppendRequest[]][] = [
    [
      "two callers' chains of one effect, then a racer's single move from the state the first passed through",
      () => [
        move(e, 'PROPOSED', 'AUTHORIZED'),
        chained(move(e, 'AUTHORIZED', 'DISPATCHED', { by: 1 })),
        move(e, 'PROPOSED', 'AUTHORIZED'),
        chained(move(e, 'AUTHORIZED', 'REJECTED', { by: 2 })),
        move(e, 'AUTHORIZED', 'REJECTED', { by: 3 }),
        move(e, 'DISPATCHED', 'COMMITTED', { by: 4 }),
      ],
    ],
    [
      'a chain whose first state loses, though its later one alone would pass; the chain beside it goes',
      () => [
        move(f, 'PROPOSED', 'AUTHORIZED'),
        chained(move(f, 'AUTHORIZED', 'DISPATCHED')),
        move(g, 'PROPOSED', 'AUTHORIZED'),
        chained(move(g, 'AUTHORIZED', 'DISPATCHED')),
      ],
    ],
    [
      'a stale fencing token in the middle of a chain fences it whole; the next chain of the same effect, under the live lease, goes',
      (leases) => [
        leased(move(e, 'PROPOSED', 'AUTHORIZED'), leases.get(e.id)!),
        leased(chained(move(e, 'AUTHORIZED', 'DISPATCHED')), { relay: 'r1', token: leases.get(e.id)!.token + 99 }),
        leased(move(e, 'PROPOSED', 'REJECTED', { violations: ['x'] }), leases.get(e.id)!),
        leased(move(g, 'PROPOSED', 'AUTHORIZED'), leases.get(g.id)!),
        leased(chained(move(g, 'AUTHORIZED', 'DISPATCHED')), leases.get(g.id)!),
      ],
    ],
    [
      'a proposal twice (two gates submitting one effect), then a move of it unchained, and a chain proposing another',
      () => [
        propose(h, 1),
        chained(move(h, 'PROPOSED', 'AUTHORIZED')),
        propose(h, 1),
        chained(move(h, 'PROPOSED', 'AUTHORIZED')),
        chained(move(h, 'AUTHORIZED', 'DISPATCHED')),
        move(h, 'AUTHORIZED', 'DISPATCHED', { by: 'single' }),
        propose(effect('a3', 5), 1),
        chained(move(effect('a3', 5), 'PROPOSED', 'REJECTED', { violations: ['y'] })),
      ],
    ],
    [
      "a proposal of an effect that exists, chained on, beside a move of it",
      () => [propose(e, 1), chained(move(e, 'PROPOSED', 'AUTHORIZED')), move(e, 'PROPOSED', 'HELD'), chained(move(e, 'HELD', 'HELD', { release: 1 }))],
    ],
  ]
  it.each(cases)('%s', async (_, batch) => {
    const stores = await both()
    const sqlite = await run(stores.sqlite, batch, setup)
    const postgres = await run(stores.postgres, batch, setup)
    expect(postgres).toEqual(sqlite)
    // The batch was not lost everywhere: each case writes something.
    expect(JSON.stringify((sqlite as { told: unknown[] }).told)).toContain('written')
    await stores.sqlite.close()
    await stores.postgres.close()
  })
})

