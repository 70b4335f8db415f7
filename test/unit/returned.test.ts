/**
 * The return edge, DISPATCHED → AUTHORIZED (src/core/returned.ts), through the
 * inline gate, its recovery and reconcile-effects, on a real SQLite journal:
 * a service that asks for a longer wait than max_wait_ms gets the effect back
 * instead of a sleeping caller; it is not sent before its notBefore, and then
 * only after its premises are checked again; a target that must start over
 * ('not-applied') goes round once at once; an effect that may have landed is
 * never returned.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../src/core/config/types.js'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { proposal, type RetryOptions } from '../../src/core/gate-context.js'
import { verifyRecords } from '../../src/core/outbox/verify.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { CountingTarget } from '../helpers/counting-target.js'

let dir: string
let config: StoreConfig
let store: Store
let clock: number
const now = () => clock
let slept: number[]
const sleep = async (ms: number) => {
  slept.push(ms)
  clock += ms
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-returned-'))
  config = { kind: 'sqlite', path: join(dir, 'journal.db') }
  store = await openStore(config)
  clock = Date.parse('2031-05-01T12:00:00.000Z')
  slept = []
})
afterEach(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

function gateWith(t: CountingTarget, retry: Partial<RetryOptions> = {}): Gate {
  return new Gate({ store, targets: [t], sleep, now, retry: { maxAttempts: 3, backoffMs: 1, maxWaitMs: 1_000, ...retry } })
}
const effect = (target: string, n = 1) => ({ thread: 't', target, action: 'do', args: { n } })

async function history(id: string) {
  return store.history(id)
}

/** Counts premise checks, and can make them fail. */
function checked(t: CountingTarget): { count: number } {
  const seen = { count: 0 }
  t.validatePremises = async () => {
    seen.count++
    return t.violations
  }
  return seen
}

describe('a wait longer than max_wait_ms', () => {
  it.each([1, 2, 3] as const)('tier %i: returned to AUTHORIZED with the time; submit answers in flight without sleeping', async (tier) => {
    const t = new CountingTarget(`t${tier}`, tier)
    t.faults = [{ kind: 'retry-later', retryAfterMs: 3_600_000 }]
    const out = await gateWith(t).submit(effect(t.name))
    const notBefore = new Date(clock + 3_600_000).toISOString()
    expect(out).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED', notBefore })
    expect(out.status === 'in_flight' && out.reason).toContain(`not sent again before ${notBefore}`)
    expect(slept).toEqual([])
    expect(t.calls.get(out.effectId)).toBe(1)
    expect(t.count(out.effectId)).toBe(0)
    const records = await history(out.effectId)
    expect(records.map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED'])
    expect(records[3]!.data).toEqual({ returned: expect.stringContaining('max_wait_ms 1000'), notBefore })
  })

  it('a wait within max_wait_ms is spent in place, and the effect lands in the same submit', async () => {
    const t = new CountingTarget('t3', 3)
    t.faults = [{ kind: 'retry-later', retryAfterMs: 800 }]
    const out = await gateWith(t).submit(effect('t3'))
    expect(out.status).toBe('committed')
    expect(slept).toEqual([800])
    expect((await history(out.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
  })

  it('our own back-off never exceeds max_wait_ms either', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'not-sent' }, { kind: 'not-sent' }]
    await gateWith(t, { backoffMs: 5_000, maxWaitMs: 2_000 }).submit(effect('t1'))
    expect(slept).toEqual([2_000, 2_000])
  })

  it('submitting it again while it waits sends nothing and says when it goes', async () => {
    const t = new CountingTarget('t3', 3)
    t.faults = [{ kind: 'retry-later', retryAfterMs: 60_000 }]
    const gate = gateWith(t)
    const first = await gate.submit(effect('t3'))
    const again = await gate.submit(effect('t3'))
    expect(again).toEqual(first)
    expect(t.calls.get(first.effectId)).toBe(1)
  })

  it('never after an unknown outcome: an effect that may have landed stays DISPATCHED, with the time to ask again', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'unknown', afterApplying: true }, { kind: 'retry-later', retryAfterMs: 60_000 }]
    const out = await gateWith(t).submit(effect('t1'))
    expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED', notBefore: new Date(clock + 60_000).toISOString() })
    expect((await history(out.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED'])
  })
})

describe('tries run out and nothing was sent', () => {
  it.each([1, 2, 3] as const)('tier %i: every try "not sent" or "not now": returned to AUTHORIZED, not left DISPATCHED', async (tier) => {
    const t = new CountingTarget(`t${tier}`, tier)
    t.faults = [{ kind: 'not-sent' }, { kind: 'retry-later', retryAfterMs: 10 }, { kind: 'not-sent' }]
    const out = await gateWith(t).submit(effect(t.name))
    expect(out).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED' })
    expect(out.status === 'in_flight' && out.reason).toContain('nothing was sent')
    expect(t.count(out.effectId)).toBe(0)
    const records = await history(out.effectId)
    expect(records.map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED'])
    expect(records[3]!.data).toMatchObject({ returned: expect.stringContaining('gave up after 3 tries') })
    // Recovery later takes it from AUTHORIZED: tier 3 is sent once, not marked AMBIGUOUS.
    clock += 60_000
    const report = await gateWith(t).recover()
    expect(report.effects[0]).toMatchObject({ found: 'AUTHORIZED', outcome: { status: 'committed' } })
    expect(t.count(out.effectId)).toBe(1)
  })

  it('a try whose outcome was unknown keeps it DISPATCHED for recovery by tier', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'unknown' }, { kind: 'not-sent' }, { kind: 'not-sent' }]
    const out = await gateWith(t).submit(effect('t1'))
    expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })
  })
})

describe('recovery of a returned effect', () => {
  it('gate.recover() leaves it alone until notBefore (too recent), then re-checks premises and sends it once', async () => {
    const t = new CountingTarget('t3', 3)
    const premises = checked(t)
    t.faults = [{ kind: 'retry-later', retryAfterMs: 60_000 }]
    const gate = gateWith(t)
    const out = await gate.submit(effect('t3'))
    expect(premises.count).toBe(1)

    clock += 59_000
    const early = await gate.recover()
    expect(early.effects).toEqual([])
    expect(early.skipped.recent).toBe(1)
    expect(t.calls.get(out.effectId)).toBe(1)

    clock += 1_000
    const late = await gate.recover()
    expect(late.effects).toMatchObject([{ effectId: out.effectId, found: 'AUTHORIZED', action: 'resumed', outcome: { status: 'committed' } }])
    expect(premises.count).toBe(2)
    expect(t.count(out.effectId)).toBe(1)
    expect((await history(out.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
  })

  it('a world that changed while it waited rejects it: nothing is sent', async () => {
    const t = new CountingTarget('t2', 2)
    t.faults = [{ kind: 'retry-later', retryAfterMs: 60_000 }]
    const gate = gateWith(t)
    const out = await gate.submit(effect('t2'))
    clock += 60_000
    t.violations = ['the pull request head moved']
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ action: 'resumed', outcome: { status: 'rejected', violations: ['the pull request head moved'] } }])
    expect(t.calls.get(out.effectId)).toBe(1)
    expect(t.count(out.effectId)).toBe(0)
  })

  it('reconcile-effects counts it as too recent until notBefore, whatever its grace period, then carries it on', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'retry-later', retryAfterMs: 600_000 }]
    const out = await gateWith(t).submit(effect('t1'))
    const run = () => reconcileEffects({ store, storeConfig: config, targets: [t], olderThanMs: 0, concurrency: 1, now, sleep, retry: { maxAttempts: 2, backoffMs: 1 } })

    const early = await run()
    expect(early.report!.skipped.recent).toBe(1)
    expect(early.report!.effects).toEqual([])
    expect(t.calls.get(out.effectId)).toBe(1)

    clock += 600_000
    const late = await run()
    expect(late.report!.effects).toMatchObject([{ effectId: out.effectId, action: 'resumed', outcome: { status: 'committed' } }])
    expect(late.status).toBe('clean')
    expect(t.count(out.effectId)).toBe(1)
  })

  it('a DISPATCHED effect that recovery finds returned by its target is reported as returned', async () => {
    const t = new CountingTarget('t1', 1)
    t.faults = [{ kind: 'unknown' }, { kind: 'unknown' }, { kind: 'unknown' }]
    const gate = gateWith(t)
    const out = await gate.submit(effect('t1'))
    expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })
    t.faults = [{ kind: 'not-applied', retryAfterMs: 3_600_000 }]
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ found: 'DISPATCHED', action: 'returned', outcome: { status: 'in_flight', state: 'AUTHORIZED' } }])
  })
})

describe("a target that must start over ('not-applied')", () => {
  it('without a wait: back to AUTHORIZED, premises checked again, sent again in the same submit', async () => {
    const t = new CountingTarget('t1', 1)
    const premises = checked(t)
    t.faults = [{ kind: 'not-applied' }]
    const out = await gateWith(t).submit(effect('t1'))
    expect(out.status).toBe('committed')
    expect(premises.count).toBe(2)
    expect(t.count(out.effectId)).toBe(1)
    const records = await history(out.effectId)
    expect(records.map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    expect(records[3]!.data).toEqual({ returned: 'injected not-applied' })
  })

  it('even after an unknown outcome: the target vouches that nothing took place', async () => {
    const t = new CountingTarget('t2', 2)
    const premises = checked(t)
    t.faults = [{ kind: 'unknown' }, { kind: 'not-applied' }]
    const out = await gateWith(t).submit(effect('t2'))
    expect(out.status).toBe('committed')
    expect(t.count(out.effectId)).toBe(1)
    expect(premises.count).toBe(2)
    expect((await history(out.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
  })

  it('returned twice in one pass, it waits for the next pass', async () => {
    const t = new CountingTarget('t3', 3)
    t.faults = [{ kind: 'not-applied' }, { kind: 'not-applied' }]
    const gate = gateWith(t)
    const out = await gate.submit(effect('t3'))
    expect(out).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED' })
    expect(t.calls.get(out.effectId)).toBe(2)
    const report = await gate.recover()
    expect(report.effects).toMatchObject([{ action: 'resumed', outcome: { status: 'committed' } }])
    expect(t.count(out.effectId)).toBe(1)
  })

  it('with a wait within max_wait_ms: spent in place, then premises and the send', async () => {
    const t = new CountingTarget('t3', 3)
    const premises = checked(t)
    t.faults = [{ kind: 'not-applied', retryAfterMs: 500 }]
    const out = await gateWith(t).submit(effect('t3'))
    expect(out.status).toBe('committed')
    expect(slept).toEqual([500])
    expect(premises.count).toBe(2)
    const records = await history(out.effectId)
    expect(records[3]).toMatchObject({ state: 'AUTHORIZED', data: { returned: 'injected not-applied', notBefore: new Date(clock).toISOString() } }) // the clock stands where the wait ended
  })
})

describe('outbox verify', () => {
  it('accepts a return, and flags a DISPATCHED → AUTHORIZED record that does not say why', async () => {
    const t = new CountingTarget('t3', 3)
    t.faults = [{ kind: 'retry-later', retryAfterMs: 60_000 }]
    const gate = gateWith(t)
    const returned = await gate.submit(effect('t3', 1))
    clock += 60_000
    await gate.recover()
    expect((await history(returned.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    expect((await verifyRecords(store.records(), { operators: [] })).problems).toEqual([])

    const e = toEffect(effect('t3', 2))
    for (const step of [
      { effectId: e.id, from: null, to: 'PROPOSED' as const, data: proposal(e, 3), effect: e, tier: 3 as const },
      { effectId: e.id, from: 'PROPOSED' as const, to: 'AUTHORIZED' as const, data: {} },
      { effectId: e.id, from: 'AUTHORIZED' as const, to: 'DISPATCHED' as const, data: {} },
      { effectId: e.id, from: 'DISPATCHED' as const, to: 'AUTHORIZED' as const, data: {} },
    ]) {
      expect((await store.append([step]))[0]!.ok).toBe(true)
    }
    const report = await verifyRecords(store.records(), { operators: [] })
    expect(report.problems).toEqual([expect.objectContaining({ effectId: e.id, message: expect.stringContaining('without saying why') })])
  })
})
