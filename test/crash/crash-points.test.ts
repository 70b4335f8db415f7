/**
 * Every crash point × tier × store: a child process submits one effect and is
 * SIGKILLed at the armed point; this process recovers and checks the target's
 * own count of applications (the service's ledger, never the journal).
 *
 * tier 1 and 2: exactly one application, COMMITTED.
 * tier 3: COMMITTED once if the crash came before DISPATCHED or after
 * COMMITTED; AMBIGUOUS (at most one application) if it came in between.
 * Then one reconcile-effects pass, and the harness's invariants
 * (invariants.ts). Relay mode's points are in crash-points-relay.test.ts.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import type { CrashPoint } from '../../src/core/crash-points.js'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { pointRig, TIERS } from './point-rig.js'

const POINTS: CrashPoint[] = ['after-proposed', 'after-authorized', 'after-dispatched', 'after-apply', 'after-committed']
const IN_FLIGHT_WINDOW: CrashPoint[] = ['after-dispatched', 'after-apply']

const rig = pointRig('interlock-crash')
const { targetFor, applications, stores } = rig

describe.each(stores)('crash points on %s', (storeName, storeConfig) => {
  beforeAll(async () => {
    await install(storeConfig())
  })

  describe.each(TIERS)('tier %i', (tier) => {
    it.each(POINTS)('killed %s: recovery leaves the target applied the right number of times', async (point) => {
      const targets = { svc: targetFor(tier) }
      const input = { thread: `crash-${storeName}-${tier}-${point}`, target: 'svc', action: 'charge', args: { amount: '1.00' } }
      const id = toEffect(input).id
      await rig.killAt('submit-child', point, { store: storeConfig(), targets, effects: [input] }, `${storeName}-${tier}-${point}`)

      const store = await openStore(storeConfig())
      const gate = new Gate({ store, targets: createTargets(targets).values(), retry: { maxAttempts: 3, backoffMs: 10 } })
      try {
        await gate.recover()
        const final = (await store.get(id))!.state
        if (tier === 3 && IN_FLIGHT_WINDOW.includes(point)) {
          expect(final).toBe('AMBIGUOUS')
          expect(applications(tier, id)).toBeLessThanOrEqual(1)
          expect(applications(tier, id)).toBe(point === 'after-apply' ? 1 : 0)
        } else {
          expect(final).toBe('COMMITTED')
          expect(applications(tier, id)).toBe(1)
        }
        // A second recovery, then a reconcile pass, change nothing and apply nothing.
        await gate.recover()
        await reconcileEffects({ store, storeConfig: storeConfig(), targets: createTargets(targets).values(), olderThanMs: 0, concurrency: 1 })
        expect((await store.get(id))!.state).toBe(final)
        expect(applications(tier, id)).toBeLessThanOrEqual(1)
        await rig.expectWhole(store, { id, tier, crashedInWindow: IN_FLIGHT_WINDOW.includes(point) })
      } finally {
        await gate.close()
        await store.close()
      }
    })
  })
})
