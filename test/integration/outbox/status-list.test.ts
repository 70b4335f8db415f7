/** outbox status and list on real stores of each kind: counts, the oldest in flight, who waits, relay heartbeats, filters and pages. */
import { afterAll, describe, expect, it } from 'vitest'
import { Gate } from '../../../src/core/gate.js'
import { listEffects } from '../../../src/core/outbox/list.js'
import { outboxStatus } from '../../../src/core/outbox/status.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox } from '../../helpers/outbox-stores.js'

afterAll(() => dropOutboxDatabase())

const policy = new RulesPolicy([{ name: 'large', target: 'payments', when: [{ arg: 'amount', above: '500.00' }], quorum: 1, releaseTtlMs: 60_000 }])

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
])('status and list on %s', (_kind, make) => {
  it('counts, waits and heartbeats; filters and pages', async () => {
    const h = await make()
    const store = await h.open()
    const payments = new CountingTarget('payments', 1)
    const mail = new CountingTarget('mail', 3)
    const gate = new Gate({ store, targets: [payments, mail], policy, retry: { maxAttempts: 1, backoffMs: 0 } })
    try {
      const before = new Date().toISOString()
      const held = await gate.submit({ thread: 'a', target: 'payments', action: 'refund', args: { amount: '900.00' } })
      for (let i = 0; i < 4; i++) await gate.submit({ thread: 'b', target: 'payments', action: 'refund', args: { amount: `${i + 1}.00` } })
      mail.faults.push({ kind: 'unknown' })
      const ambiguous = await gate.submit({ thread: 'c', target: 'mail', action: 'send', args: { to: 'x@example.com' } })
      payments.faults.push({ kind: 'unknown' })
      const inFlight = await gate.submit({ thread: 'd', target: 'payments', action: 'refund', args: { amount: '7.00' } })
      expect(inFlight).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })

      let status = await outboxStatus(store, new Date())
      expect(status.counts).toMatchObject({ HELD: 1, COMMITTED: 4, AMBIGUOUS: 1, DISPATCHED: 1 })
      expect(status.total).toBe(7)
      // The rule and why it holds this effect (a fail-safe hold names what it could not read).
      expect(status.held).toMatchObject([{ effectId: held.effectId, why: 'rule "large": args.amount 900.00 is above 500.00', thread: 'a' }])
      expect(status.ambiguous).toMatchObject([{ effectId: ambiguous.effectId, target: 'mail' }])
      expect(status.oldestInFlight).toMatchObject({ effectId: inFlight.effectId, state: 'DISPATCHED' })
      expect(status.relays).toEqual([])
      await store.heartbeat('relay-1', { claimed: 3 })
      status = await outboxStatus(store, new Date())
      expect(status.relays).toMatchObject([{ relay: 'relay-1', info: { claimed: 3 } }])

      const all = await listEffects(store, { limit: 3, page: 1 })
      expect(all).toMatchObject({ more: true })
      const pages = [all, await listEffects(store, { limit: 3, page: 2 }), await listEffects(store, { limit: 3, page: 3 })]
      expect(pages.map((p) => p.more)).toEqual([true, true, false])
      const ids = pages.flatMap((p) => p.effects.map((e) => e.effectId))
      expect(new Set(ids).size).toBe(7)
      expect((await listEffects(store, { thread: 'b', limit: 50, page: 1 })).effects).toHaveLength(4)
      expect((await listEffects(store, { states: ['HELD', 'AMBIGUOUS'], limit: 50, page: 1 })).effects).toHaveLength(2)
      expect((await listEffects(store, { target: 'mail', limit: 50, page: 1 })).effects).toMatchObject([{ effectId: ambiguous.effectId }])
      expect((await listEffects(store, { since: before, limit: 50, page: 1 })).effects).toHaveLength(7)
      expect((await listEffects(store, { until: before, limit: 50, page: 1 })).effects).toHaveLength(0)
    } finally {
      await gate.close()
      await store.close()
      await h.dispose()
    }
  })

  it('counts with one grouped query and reads only the effects it shows, the oldest in flight among several', async () => {
    const h = await make()
    const store = await h.open()
    const payments = new CountingTarget('payments', 1)
    const gate = new Gate({ store, targets: [payments], policy, retry: { maxAttempts: 1, backoffMs: 0 } })
    try {
      for (let i = 0; i < 30; i++) await gate.submit({ thread: 'settled', target: 'payments', action: 'refund', args: { amount: `${i + 1}.00` } })
      const stuck: string[] = []
      for (let i = 0; i < 3; i++) {
        payments.faults.push({ kind: 'unknown' })
        // Distinct creation times, so "oldest" has one answer.
        await new Promise((r) => setTimeout(r, 2))
        stuck.push((await gate.submit({ thread: `stuck-${i}`, target: 'payments', action: 'refund', args: { amount: `${i + 100}.00` } })).effectId)
      }
      await gate.submit({ thread: 'held', target: 'payments', action: 'refund', args: { amount: '900.00' } })
      let rowsRead = 0
      let countQueries = 0
      const watched = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'list') return async (f: Parameters<typeof store.list>[0]) => {
            const rows = await target.list(f)
            rowsRead += rows.length
            return rows
          }
          if (prop === 'countByState') return () => (countQueries++, target.countByState())
          return Reflect.get(target, prop, receiver)
        },
      })
      const status = await outboxStatus(watched, new Date())
      expect(status.counts).toMatchObject({ COMMITTED: 30, DISPATCHED: 3, HELD: 1 })
      expect(status.total).toBe(34)
      expect(status.oldestInFlight).toMatchObject({ effectId: stuck[0], state: 'DISPATCHED' })
      expect(countQueries).toBe(1)
      // The held effect and the oldest in flight: nothing else is read.
      expect(rowsRead).toBe(2)
    } finally {
      await gate.close()
      await store.close()
      await h.dispose()
    }
  })
})
