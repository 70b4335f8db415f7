/**
 * Many writers at once on the same effects and journals, through the
 * PostgreSQL batch appends (schemas/postgres/0004_append_chain.sql): gates'
 * chains and single moves joined by group commit into append_chains(), and
 * relays' claimed batches, from several Store instances (several pools, as
 * separate processes would be). Whatever the interleaving, each race on an
 * effect has exactly one winner, written whole; every loser writes nothing;
 * a relay whose lease was taken over writes nothing; and the journal's
 * invariants hold (test/helpers/pg-journal-invariants.ts).
 */
import { describe, expect, it } from 'vitest'
import type { Effect } from '../../../src/core/effect.js'
import { install } from '../../../src/core/stores/migrate.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { AppendRequest, AppendResult, Lease, Store } from '../../../src/core/stores/store.js'
import { effect, move, propose } from '../../contract/fixtures.js'
import { journalViolations, recordsByEffect } from '../../helpers/pg-journal-invariants.js'
import { useTestDatabase } from '../../helpers/pg.js'

const pgt = useTestDatabase()

let n = 0
/** A schema of its own and `count` stores on it, each its own pool with group commit in front. */
async function stores(count: number): Promise<{ schema: string; stores: Store[]; close(): Promise<void> }> {
  const schema = `races_${++n}`
  const config = { kind: 'postgres' as const, url: pgt.db.url, schema }
  await install(config)
  const out = await Promise.all(Array.from({ length: count }, () => openStore(config, { maxConnections: 3 })))
  return { schema, stores: out, close: async () => void (await Promise.all(out.map((s) => s.close()))) }
}

const chained = (r: AppendRequest): AppendRequest => ({ ...r, chained: true })
const leased = (rs: AppendRequest[], lease: Lease): AppendRequest[] => rs.map((r) => ({ ...r, lease }))

/** A writer's attempt: what it sent and what it was told. */
interface Attempt {
  requests: AppendRequest[]
  results: AppendResult[]
}

/** All of an attempt's requests written, or none: anything else breaks "a chain all or nothing". */
function outcome(a: Attempt): 'won' | 'lost' {
  const oks = a.results.map((r) => r.ok)
  if (oks.every(Boolean)) return 'won'
  if (oks.some(Boolean)) throw new Error(`a chain came back partly written: ${JSON.stringify(oks)}`)
  return 'lost'
}

/** Each effect's records are exactly its winners' states, in the order they won; a loser's state appears nowhere it did not win. */
async function expectWrittenExactly(schema: string, winners: Map<string, Attempt[]>): Promise<void> {
  const written = await recordsByEffect(pgt.admin, schema)
  for (const [id, won] of winners) {
    expect((written.get(id) ?? []).map((r) => r.state), `effect ${id}`).toEqual(won.flatMap((a) => a.requests.map((r) => r.to)))
  }
}

async function attempt(store: Store, requests: AppendRequest[]): Promise<Attempt> {
  return { requests, results: await store.append(requests) }
}

describe('PostgreSQL batch appends under racing gates and relays', () => {
  it("gates racing on the same effects from three pools, several callers' chains of one effect in one batch: one winner per race, written whole", async () => {
    const { schema, stores: [a, b, c], close } = await stores(3)
    const pools = [a!, b!, c!]
    const effects = Array.from({ length: 18 }, (_, i) => effect(`t${i % 3}`, i))
    const winners = new Map<string, Attempt[]>(effects.map((e) => [e.id, []]))
    const record = (e: Effect, attempts: Attempt[]) => {
      const won = attempts.filter((x) => outcome(x) === 'won')
      expect(won.length, `effect ${e.id}`).toBeLessThanOrEqual(1)
      winners.get(e.id)!.push(...won)
      return won.length
    }

    for (let round = 0; round < 3; round++) {
      // 1. Four callers per effect send a gate's first commit: PROPOSED with AUTHORIZED and DISPATCHED or REJECTED.
      //    Callers k and k + 3 share a pool, so group commit puts two chains of one effect in one append_chains() call.
      const fresh = effects.map((e, i) => effect(e.thread, `${round}-${i}`))
      const first = await Promise.all(
        fresh.flatMap((e) =>
          [0, 1, 2, 3].map((k) =>
            attempt(pools[k % 3]!, [
              propose(e, 1),
              chained(move(e, 'PROPOSED', 'AUTHORIZED')),
              chained(k % 2 === 0 ? move(e, 'AUTHORIZED', 'DISPATCHED', { k }) : move(e, 'AUTHORIZED', 'REJECTED', { violations: [`k${k}`] })),
            ]).then((x) => ({ e, x })),
          ),
        ),
      )
      for (const e of fresh) {
        winners.set(e.id, [])
        expect(record(e, first.filter((f) => f.e === e).map((f) => f.x)), `proposal of ${e.id}`).toBe(1)
      }

      // 2. Outcomes racing from the state each effect was left in: single moves and a chain, and re-proposals that must all lose.
      const second = await Promise.all(
        fresh.flatMap((e) => {
          const state = winners.get(e.id)![0]!.requests.at(-1)!.to
          const tries: AppendRequest[][] =
            state === 'DISPATCHED'
              ? [
                  [move(e, 'DISPATCHED', 'COMMITTED', { receipt: 1 })],
                  [move(e, 'DISPATCHED', 'FAILED', { receipt: 2 })],
                  [move(e, 'DISPATCHED', 'AUTHORIZED', { returned: true }), chained(move(e, 'AUTHORIZED', 'REJECTED', { violations: ['x'] }))],
                  [move(e, 'DISPATCHED', 'AMBIGUOUS')],
                ]
              : [
                  [propose(e, 1), chained(move(e, 'PROPOSED', 'AUTHORIZED'))],
                  [move(e, 'PROPOSED', 'AUTHORIZED'), chained(move(e, 'AUTHORIZED', 'DISPATCHED'))],
                ]
          return tries.map((t, k) => attempt(pools[(k + round) % 3]!, t).then((x) => ({ e, x, state })))
        }),
      )
      for (const e of fresh) {
        const mine = second.filter((s) => s.e === e)
        expect(record(e, mine.map((s) => s.x)), `outcome of ${e.id}`).toBe(mine[0]!.state === 'DISPATCHED' ? 1 : 0)
        // Every loser was told the effect as the winner left it.
        for (const s of mine.filter((s) => outcome(s.x) === 'lost')) {
          const won = winners.get(e.id)!.at(-1)!.requests.at(-1)!.to
          for (const r of s.x.results) expect(r.ok ? undefined : r.current?.state).toBe(won)
        }
      }
    }
    await expectWrittenExactly(schema, winners)
    expect(await journalViolations(pgt.admin, schema)).toEqual([])
    await close()
  })

  it("two relays on one batch of effects, one whose leases were taken over, a gate racing them, and a stale token in the middle of the fresh relay's batch", async () => {
    const { schema, stores: [a, b, c], close } = await stores(3)
    for (let round = 0; round < 3; round++) {
      const effects = Array.from({ length: 12 }, (_, i) => effect(`r${round}-${i % 2}`, i))
      for (const e of effects) expect((await c!.append([propose(e, 1)]))[0]!.ok).toBe(true)
      // Relay A's leases run out; relay B claims the same effects (new fencing tokens).
      const claimedA = await a!.claim({ relay: 'A', limit: 100, leaseMs: 1 })
      expect(claimedA).toHaveLength(effects.length)
      await new Promise((r) => setTimeout(r, 20))
      const claimedB = await b!.claim({ relay: 'B', limit: 100, leaseMs: 60_000 })
      expect(claimedB).toHaveLength(effects.length)
      const leaseOf = (claimed: typeof claimedA, e: Effect) => claimed.find((x) => x.snapshot.effect.id === e.id)!.lease
      const stale = effects[6]!
      const chain = (e: Effect, lease: Lease) =>
        leased([move(e, 'PROPOSED', 'AUTHORIZED', { by: lease.relay }), chained(move(e, 'AUTHORIZED', 'DISPATCHED', { by: lease.relay }))], lease)
      const batchA = effects.flatMap((e) => chain(e, leaseOf(claimedA, e)))
      const batchB = effects.flatMap((e) => chain(e, e === stale ? { relay: 'B', token: leaseOf(claimedB, e).token - 1 } : leaseOf(claimedB, e)))
      // A gate without a lease (inline mode) races on the first three, through the third pool.
      const gate = effects.slice(0, 3).map((e) => [move(e, 'PROPOSED', 'AUTHORIZED'), chained(move(e, 'AUTHORIZED', 'REJECTED', { violations: ['gate'] }))])
      const [resA, resB, ...resGate] = await Promise.all([a!.append(batchA), b!.append(batchB), ...gate.map((g) => c!.append(g))])

      // A's leases were taken over: nothing of its batch is written, whatever order the commits came in.
      expect(resA!.map((r) => r.ok)).toEqual(batchA.map(() => false))
      effects.forEach((e, i) => {
        const fromB = resB!.slice(2 * i, 2 * i + 2).map((r) => r.ok)
        const fromGate = i < 3 ? resGate[i]!.map((r) => r.ok) : [false, false]
        expect([fromB[0], fromB[1]], `effect ${i}: B's chain whole or not at all`).toEqual([fromB[0], fromB[0]])
        expect([fromGate[0], fromGate[1]]).toEqual([fromGate[0], fromGate[0]])
        if (e === stale) expect(fromB[0], 'the stale token writes nothing').toBe(false)
        else expect(Number(fromB[0]) + Number(fromGate[0]), `effect ${i}: exactly one of B and the gate`).toBe(1)
      })
      const states = new Map((await recordsByEffect(pgt.admin, schema)).entries())
      expect(states.get(stale.id)!.map((r) => r.state)).toEqual(['PROPOSED'])
      for (const e of effects) {
        const data = states.get(e.id)!.slice(1).map((r) => JSON.parse(r.data) as { by?: string })
        expect(data.every((d) => d.by !== 'A'), `effect ${e.id}: nothing of relay A`).toBe(true)
      }
    }
    expect(await journalViolations(pgt.admin, schema)).toEqual([])
    await close()
  })
})

