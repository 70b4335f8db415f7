/**
 * The crash points off the straight path (crash-points.test.ts has the five on
 * it): a child process submits one effect that policy holds, that the service
 * refuses, whose pushed-down premise fails, or whose answer is lost on tier 3,
 * and is SIGKILLed right after that state is durable. Recovery, then a
 * reconcile pass, must leave the state as it was and the service's own count
 * as it was: nothing sent for HELD, REJECTED and FAILED, at most once for
 * AMBIGUOUS. Both stores. The release's own point (after-release) is judged in
 * test/e2e/outbox-crash.test.ts.
 *
 * after-returned: the service answered 429 with a Retry-After longer than the
 * gate waits in place, so the effect went back to AUTHORIZED; killed right
 * after that record, recovery and reconcile send nothing before the time the
 * service named, and then send it exactly once.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import type { CrashPoint } from '../../src/core/crash-points.js'
import { toEffect, type Tier } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTargets } from '../../src/core/targets/registry.js'
import type { ServiceFault } from '../helpers/http-service.js'
import { pointRig, TIERS } from './point-rig.js'

interface Branch {
  point: CrashPoint
  tier: Tier
  /** What the service does with the effect's request. */
  fault?: ServiceFault
  held?: boolean
  state: string
  applied: number
}

const BRANCHES: Branch[] = [
  ...TIERS.map((tier): Branch => ({ point: 'after-held', tier, held: true, state: 'HELD', applied: 0 })),
  ...TIERS.map((tier): Branch => ({ point: 'after-rejected', tier, fault: { kind: 'status', status: 412, body: { error: { message: 'etag moved' } } }, state: 'REJECTED', applied: 0 })),
  ...TIERS.map((tier): Branch => ({ point: 'after-failed', tier, fault: { kind: 'status', status: 400, body: { error: { message: 'amount too large' } } }, state: 'FAILED', applied: 0 })),
  // Only tier 3 ends AMBIGUOUS: tiers 1 and 2 resend with the key, or ask.
  { point: 'after-ambiguous', tier: 3, fault: { kind: 'drop', afterApply: true }, state: 'AMBIGUOUS', applied: 1 },
]

const rig = pointRig('interlock-crash-branches')
const { targetFor, applications, stores } = rig

describe.each(stores)('crash points off the straight path, on %s', (storeName, storeConfig) => {
  beforeAll(async () => {
    await install(storeConfig())
  })

  it.each(BRANCHES)('killed $point (tier $tier): recovery keeps $state and the service count', async (b) => {
    const targets = { svc: targetFor(b.tier) }
    const input = { thread: `branch-${storeName}-${b.point}-${b.tier}`, target: 'svc', action: 'charge', args: { amount: '900.00' } }
    const id = toEffect(input).id
    const rules = b.held ? [{ name: 'big-charges', target: 'svc', when: [{ arg: 'amount', above: '500.00' }], quorum: 1, releaseTtlMs: 3_600_000 }] : undefined
    if (b.fault) rig.service.setFault(b.fault, { times: 1 })
    await rig.killAt('submit-child', b.point, { store: storeConfig(), targets, effects: [input], rules }, `${storeName}-${b.point}-${b.tier}`)
    expect((rig.service.requests().filter((r) => r.effectId === id)).length).toBe(b.held ? 0 : 1)

    const store = await openStore(storeConfig())
    const gate = new Gate({ store, targets: createTargets(targets).values(), retry: { maxAttempts: 3, backoffMs: 10 } })
    try {
      expect((await store.get(id))!.state).toBe(b.state)
      await gate.recover()
      await reconcileEffects({ store, storeConfig: storeConfig(), targets: createTargets(targets).values(), olderThanMs: 0, concurrency: 1 })
      expect((await store.get(id))!.state).toBe(b.state)
      expect(applications(b.tier, id)).toBe(b.applied)
      // Nothing was sent again: the only request for the effect is the child's.
      expect((rig.service.requests().filter((r) => r.effectId === id)).length).toBe(b.held ? 0 : 1)
      await rig.expectWhole(store, { id, tier: b.tier, crashedInWindow: b.state === 'AMBIGUOUS' })
    } finally {
      await gate.close()
      await store.close()
    }
  })
})

describe.each(stores)('killed after-returned, on %s', (storeName, storeConfig) => {
  beforeAll(async () => {
    await install(storeConfig())
  })

  it.each(TIERS)('tier %i: nothing sent before the Retry-After, then exactly once', async (tier) => {
    const targets = { svc: targetFor(tier) }
    const input = { thread: `returned-${storeName}-${tier}`, target: 'svc', action: 'charge', args: { amount: '12.00' } }
    const id = toEffect(input).id
    rig.service.setFault({ kind: 'status', status: 429, retryAfter: '2' }, { times: 1 })
    await rig.killAt('submit-child', 'after-returned', { store: storeConfig(), targets, effects: [input], retry: { maxWaitMs: 100 } }, `${storeName}-returned-${tier}`)
    const sent = () => rig.service.requests().filter((r) => r.effectId === id).length

    const store = await openStore(storeConfig())
    const gate = new Gate({ store, targets: createTargets(targets).values(), retry: { maxAttempts: 3, backoffMs: 10 } })
    try {
      const snap = (await store.get(id))!
      expect(snap.state).toBe('AUTHORIZED')
      const notBefore = Date.parse(String(snap.detail.notBefore))
      // Just before the time the service named, by the clock recovery and reconcile are given.
      const justBefore = () => notBefore - 1
      const early = await gate.recover({ now: justBefore })
      const swept = await reconcileEffects({ store, storeConfig: storeConfig(), targets: createTargets(targets).values(), olderThanMs: 0, concurrency: 1, now: justBefore })
      expect(early.skipped.recent).toBe(1)
      expect(swept.report!.skipped.recent).toBe(1)
      expect((await store.get(id))!.state).toBe('AUTHORIZED')
      expect(sent()).toBe(1)
      await new Promise((r) => setTimeout(r, Math.max(0, notBefore - Date.now() + 20)))
      await gate.recover()
      expect((await store.get(id))!.state).toBe('COMMITTED')
      expect(applications(tier, id)).toBe(1)
      expect(sent()).toBe(2)
      await rig.expectWhole(store, { id, tier })
    } finally {
      await gate.close()
      await store.close()
    }
  })
})
