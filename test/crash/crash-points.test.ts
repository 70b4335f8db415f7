/**
 * Every crash point × tier × store: a child process submits one effect and is
 * SIGKILLed at the armed point; this process recovers and checks the target's
 * own count of applications (the service's ledger, never the journal).
 *
 * An effect no rule holds passes three durable boundaries: its first commit
 * (PROPOSED, AUTHORIZED and DISPATCHED, made after its premises are checked),
 * apply, and COMMITTED. Killed after-premises, before that first commit:
 * nothing is journaled and nothing sent; the same submit later names the same
 * effect and applies it once. Otherwise:
 * tier 1 and 2: exactly one application, COMMITTED.
 * tier 3: COMMITTED once if the crash came after COMMITTED; AMBIGUOUS (at most
 * one application) if it came between DISPATCHED and COMMITTED.
 * The points between records of that first commit (after-proposed,
 * after-authorized) are not passed on this path: a child armed there lives.
 * Then one reconcile-effects pass, and the harness's invariants
 * (invariants.ts). Relay mode's points are in crash-points-relay.test.ts.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { CRASH_ENV, type CrashPoint } from '../../src/core/crash-points.js'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { runTsChild } from '../helpers/child.js'
import { pointRig, TIERS } from './point-rig.js'

const POINTS: CrashPoint[] = ['after-premises', 'after-dispatched', 'after-apply', 'after-committed']
/** Boundaries an effect no rule holds no longer has: PROPOSED, AUTHORIZED and DISPATCHED are one commit. */
const GONE: CrashPoint[] = ['after-proposed', 'after-authorized']
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
        if (point === 'after-premises') {
          // Killed before the first commit: nothing journaled, nothing sent, nothing to recover.
          expect(await store.get(id)).toBeUndefined()
          expect((await gate.recover()).inFlight).toBe(0)
          expect(applications(tier, id)).toBe(0)
          // The agent, restarted, submits the same effect: the same id, applied once.
          expect(await gate.submit(input)).toMatchObject({ status: 'committed', effectId: id })
        }
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

describe.each(stores)('no crash point between the records of one commit on %s', (storeName, storeConfig) => {
  beforeAll(async () => {
    await install(storeConfig())
  })

  it.each(GONE)('a child armed %s is never stopped: the effect goes PROPOSED → DISPATCHED in one commit', async (point) => {
    const targets = { svc: targetFor(1) }
    const input = { thread: `gone-${storeName}-${point}`, target: 'svc', action: 'charge', args: { amount: '2.00' } }
    const id = toEffect(input).id
    const planFile = join(rig.dir, `gone-${storeName}-${point}.json`)
    writeFileSync(planFile, JSON.stringify({ store: storeConfig(), targets, effects: [input] }))
    const run = await runTsChild('test/crash/submit-child.ts', [planFile], { [CRASH_ENV]: point })
    expect(run.signal, run.stderr).toBeNull()
    expect(run.code, run.stderr).toBe(0)
    expect(applications(1, id)).toBe(1)
    const store = await openStore(storeConfig())
    try {
      const history = await store.history(id)
      expect(history.map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
      // The first three are one commit: one transaction time.
      expect(new Set(history.slice(0, 3).map((r) => r.at)).size).toBe(1)
      await rig.expectWhole(store, { id, tier: 1 })
    } finally {
      await store.close()
    }
  })
})
