/**
 * The lease half of the store contract (relay claims, renewals, fencing,
 * heartbeats): run against every Store implementation beside store.contract.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { systemClock, type Clock } from '../../src/core/clock.js'
import type { Lease, Store } from '../../src/core/stores/store.js'
import { drive, effect, move, ok, propose, tickingClock } from './fixtures.js'
import type { StoreHarness } from './store.contract.js'

const LONG = 60_000
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

export function leaseContract(name: string, makeHarness: () => Promise<StoreHarness>): void {
  describe(`Lease contract: ${name}`, () => {
    let h: StoreHarness
    let store: Store
    const opened: Store[] = []
    const open = async (options: { clock?: Clock } = {}) => {
      const s = await h.open({ clock: tickingClock(), ...options })
      opened.push(s)
      return s
    }

    beforeEach(async () => {
      h = await makeHarness()
      store = await open()
    })
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close()
      await h.dispose()
    })

    it('claims ready effects oldest first, each with a new token; held, settled and leased ones are left', async () => {
      const ready = [effect('a', 1), effect('b', 2), effect('a', 3)]
      await drive(store, ready[0]!, 'AUTHORIZED')
      await drive(store, ready[1]!, 'PROPOSED')
      await drive(store, ready[2]!, 'DISPATCHED')
      await drive(store, effect('c', 4), 'HELD')
      await drive(store, effect('c', 5), 'COMMITTED')
      await drive(store, effect('c', 6), 'AMBIGUOUS')
      const claimed = await store.claim({ relay: 'r1', limit: 10, leaseMs: LONG })
      expect(claimed.map((c) => c.snapshot.effect.id)).toEqual(ready.map((e) => e.id))
      expect(claimed.map((c) => c.snapshot.state)).toEqual(['AUTHORIZED', 'PROPOSED', 'DISPATCHED'])
      const tokens = claimed.map((c) => c.lease.token)
      expect(new Set(tokens).size).toBe(3)
      expect(claimed.every((c) => c.lease.relay === 'r1' && Date.parse(c.expiresAt) > 0)).toBe(true)
      // Live leases: nobody takes them again.
      expect(await store.claim({ relay: 'r2', limit: 10, leaseMs: LONG })).toEqual([])
    })

    it('claims HELD effects when asked (reconcile-effects leases them while it finishes stranded releases), never by default', async () => {
      const held = [effect('h', 1), effect('h', 2)]
      for (const e of held) await drive(store, e, 'HELD')
      await drive(store, effect('r', 3), 'AUTHORIZED')
      const claimed = await store.claim({ relay: 'reconcile', limit: 10, leaseMs: LONG, states: ['HELD'] })
      expect(claimed.map((c) => c.snapshot.effect.id)).toEqual(held.map((e) => e.id))
      expect(claimed.every((c) => c.snapshot.state === 'HELD')).toBe(true)
      expect(await store.claim({ relay: 'other', limit: 10, leaseMs: LONG, states: ['HELD'] })).toEqual([])
      await store.releaseLease('reconcile', [{ effectId: held[0]!.id, token: claimed[0]!.lease.token }])
      expect((await store.claim({ relay: 'other', limit: 10, leaseMs: LONG, states: ['HELD'] })).map((c) => c.snapshot.effect.id)).toEqual([held[0]!.id])
    })

    it('honours limit, states and targets', async () => {
      for (let i = 0; i < 5; i++) await drive(store, effect('t', i, i % 2 ? 'odd' : 'even'), 'AUTHORIZED')
      expect(await store.claim({ relay: 'r', limit: 10, leaseMs: LONG, targets: [] })).toEqual([])
      expect(await store.claim({ relay: 'r', limit: 10, leaseMs: LONG, states: ['PROPOSED'] })).toEqual([])
      const odd = await store.claim({ relay: 'r', limit: 10, leaseMs: LONG, targets: ['odd'] })
      expect(odd.map((c) => c.snapshot.effect.target)).toEqual(['odd', 'odd'])
      const two = await store.claim({ relay: 'r', limit: 2, leaseMs: LONG })
      expect(two).toHaveLength(2)
      expect((await store.claim({ relay: 'r', limit: 2, leaseMs: LONG })).length).toBe(1)
    })

    it('createdFrom: only effects created at or after it', async () => {
      const es = [effect('c', 1), effect('c', 2), effect('c', 3)]
      for (const e of es) await drive(store, e, 'AUTHORIZED')
      const from = (await store.get(es[1]!.id))!.createdAt
      const claimed = await store.claim({ relay: 'r', limit: 10, leaseMs: LONG, createdFrom: from })
      expect(claimed.map((c) => c.snapshot.effect.id)).toEqual([es[1]!.id, es[2]!.id])
      expect((await store.claim({ relay: 'r', limit: 10, leaseMs: LONG })).map((c) => c.snapshot.effect.id)).toEqual([es[0]!.id])
    })

    it('fencing: after a lease expires and another relay claims, the first relay can no longer move the effect', async () => {
      const e = effect('f', 1)
      await drive(store, e, 'AUTHORIZED')
      const [first] = await store.claim({ relay: 'r1', limit: 1, leaseMs: 1 })
      await pause(30)
      const [second] = await store.claim({ relay: 'r2', limit: 1, leaseMs: LONG })
      expect(second!.snapshot.effect.id).toBe(e.id)
      expect(second!.lease.token).toBeGreaterThan(first!.lease.token)
      const stale = await store.append([{ ...move(e, 'AUTHORIZED', 'DISPATCHED'), lease: first!.lease }])
      expect(stale[0]!.ok).toBe(false)
      expect(stale[0]).toMatchObject({ current: { state: 'AUTHORIZED' } })
      // A relay name alone is not enough: the token must match too.
      const forged: Lease = { relay: 'r2', token: first!.lease.token }
      expect((await store.append([{ ...move(e, 'AUTHORIZED', 'DISPATCHED'), lease: forged }]))[0]!.ok).toBe(false)
      ok((await store.append([{ ...move(e, 'AUTHORIZED', 'DISPATCHED'), lease: second!.lease }]))[0])
      expect(await store.renewLease('r1', [{ effectId: e.id, token: first!.lease.token }], LONG)).toEqual([])
      expect(await store.renewLease('r2', [{ effectId: e.id, token: second!.lease.token }], LONG)).toEqual([e.id])
    })

    it('an append that names a lease loses when the effect has none; one without a lease is not fenced', async () => {
      const e = effect('n', 1)
      await drive(store, e, 'AUTHORIZED')
      expect((await store.append([{ ...move(e, 'AUTHORIZED', 'DISPATCHED'), lease: { relay: 'r', token: 1 } }]))[0]!.ok).toBe(false)
      ok((await store.append([move(e, 'AUTHORIZED', 'DISPATCHED')]))[0])
    })

    it('a fenced loser in a batch leaves the other requests of the batch alone', async () => {
      const a = effect('batch', 1)
      const b = effect('batch', 2)
      await drive(store, a, 'AUTHORIZED')
      await drive(store, b, 'AUTHORIZED')
      const [ca, cb] = await store.claim({ relay: 'r', limit: 2, leaseMs: LONG })
      const results = await store.append([
        { ...move(a, 'AUTHORIZED', 'DISPATCHED'), lease: { relay: 'r', token: ca!.lease.token + 1000 } },
        { ...move(b, 'AUTHORIZED', 'DISPATCHED'), lease: cb!.lease },
      ])
      expect(results.map((r) => r.ok)).toEqual([false, true])
    })

    it('a DISPATCHED effect is taken again only once its lease runs out', async () => {
      const e = effect('d', 1)
      await drive(store, e, 'AUTHORIZED')
      const [c] = await store.claim({ relay: 'r1', limit: 1, leaseMs: 1 })
      await store.renewLease('r1', [{ effectId: e.id, token: c!.lease.token }], LONG)
      ok((await store.append([{ ...move(e, 'AUTHORIZED', 'DISPATCHED'), lease: c!.lease }]))[0])
      await pause(30)
      expect(await store.claim({ relay: 'r2', limit: 5, leaseMs: LONG })).toEqual([])
      await store.renewLease('r1', [{ effectId: e.id, token: c!.lease.token }], 1)
      await pause(30)
      const [again] = await store.claim({ relay: 'r2', limit: 5, leaseMs: LONG })
      expect(again).toMatchObject({ snapshot: { state: 'DISPATCHED' }, lease: { relay: 'r2' } })
    })

    it('release lets another relay claim at once; only the holder can release', async () => {
      const e = effect('rel', 1)
      await drive(store, e, 'AUTHORIZED')
      const [c] = await store.claim({ relay: 'r1', limit: 1, leaseMs: LONG })
      await store.releaseLease('r2', [{ effectId: e.id, token: c!.lease.token }])
      expect(await store.claim({ relay: 'r2', limit: 1, leaseMs: LONG })).toEqual([])
      await store.releaseLease('r1', [{ effectId: e.id, token: c!.lease.token }])
      expect((await store.claim({ relay: 'r2', limit: 1, leaseMs: LONG }))[0]!.snapshot.effect.id).toBe(e.id)
    })

    it('two stores claiming at once never take the same effect', async () => {
      const other = await open()
      const effects = Array.from({ length: 40 }, (_, i) => effect(`j${i % 4}`, i))
      await store.append(effects.flatMap((e) => [propose(e), move(e, 'PROPOSED', 'AUTHORIZED')]))
      const rounds = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? store : other).claim({ relay: `r${i}`, limit: 7, leaseMs: LONG })),
      )
      const ids = rounds.flat().map((c) => c.snapshot.effect.id)
      expect(new Set(ids).size).toBe(ids.length)
      expect(ids.length).toBe(40)
    })

    it('claims named effects only (reconcile leases what it will act on): each if in a state asked for and its lease is free', async () => {
      const [ready, held, leased, settled, other] = [effect('a', 1), effect('a', 2), effect('b', 3), effect('b', 4), effect('c', 5)]
      await drive(store, ready, 'DISPATCHED')
      await drive(store, held, 'HELD')
      await drive(store, leased, 'AUTHORIZED')
      await drive(store, settled, 'COMMITTED')
      await drive(store, other, 'PROPOSED')
      expect((await store.claim({ relay: 'live-relay', limit: 10, leaseMs: LONG, ids: [leased.id] })).map((c) => c.snapshot.effect.id)).toEqual([leased.id])
      const named = [ready.id, held.id, leased.id, settled.id, 'f'.repeat(64)]
      const claimed = await store.claim({ relay: 'reconcile', limit: named.length, leaseMs: LONG, states: ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'HELD'], ids: named })
      expect(claimed.map((c) => c.snapshot.effect.id).sort()).toEqual([ready.id, held.id].sort())
      expect(claimed.find((c) => c.snapshot.effect.id === held.id)!.snapshot.state).toBe('HELD')
      // The effect not named is nobody's: a relay still gets it.
      expect((await store.claim({ relay: 'r2', limit: 10, leaseMs: LONG })).map((c) => c.snapshot.effect.id)).toEqual([other.id])
      expect(await store.claim({ relay: 'reconcile', limit: 5, leaseMs: LONG, ids: [] })).toEqual([])
    })

    it('heartbeats: one row per relay, info replaced, most recent first', async () => {
      expect(await store.relays()).toEqual([])
      await store.heartbeat('r1', { pid: 1, inFlight: 0 })
      await pause(5)
      await store.heartbeat('r2', { pid: 2 })
      await pause(5)
      await store.heartbeat('r1', { pid: 1, inFlight: 3 })
      const relays = await store.relays()
      expect(relays.map((r) => r.relay)).toEqual(['r1', 'r2'])
      expect(relays[0]!.info).toEqual({ pid: 1, inFlight: 3 })
      expect(Date.parse(relays[0]!.lastSeen)).toBeGreaterThanOrEqual(Date.parse(relays[0]!.startedAt))
    })

    it('forgets relays not seen for longer than asked, by the store\'s clock; each row says how long ago it was seen', async () => {
      const real = await open({ clock: systemClock })
      await real.heartbeat('old', { pid: 1 })
      await pause(400)
      await real.heartbeat('new', { pid: 2 })
      const before = await real.relays()
      expect(before.map((r) => r.relay)).toEqual(['new', 'old'])
      expect(before[0]!.ageMs).toBeGreaterThanOrEqual(0)
      expect(before[0]!.ageMs).toBeLessThan(300)
      expect(before[1]!.ageMs).toBeGreaterThanOrEqual(350)
      expect(await real.forgetRelays(200)).toBe(1)
      expect((await real.relays()).map((r) => r.relay)).toEqual(['new'])
      expect(await real.forgetRelays(60_000)).toBe(0)
    })
  })
}
