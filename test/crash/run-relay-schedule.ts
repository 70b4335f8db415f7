/**
 * Runs one schedule (schedule.ts) in relay mode and judges it:
 *
 * 1. the agent journals the effects through the outbox (duplicates included);
 *    the first relay (inside a Life, crash-model.ts) drains them and dies at
 *    its boundary; when the schedule has a second process, a second relay on
 *    its own store handle competes for the same effects all along;
 * 2. the faults are cleared and a fresh relay starts: it takes what the dead
 *    one held once those leases run out;
 * 3. one reconcile-effects pass; 4. the invariants (scene.ts).
 */
import { generateKeyPair, type KeyPair } from '../../src/core/crypto/keys.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { Relay } from '../../src/core/relay/relay.js'
import type { Store } from '../../src/core/stores/store.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { processPorts, type NegativeControl } from './controls.js'
import { crashableStore, crashableTarget, Life } from './crash-model.js'
import type { Rig } from './rig.js'
import type { Schedule } from './schedule.js'
import { inWindow, judge, RETRY, setScene, yieldTurn as sleep, type ScheduleResult, type Scene } from './scene.js'

/**
 * The relays' lease: the recovering relay waits this long for a dead relay's
 * effects. 1 s by default, so that the recovering phase stays short on a
 * loaded CI machine. A live relay that loses its lease in flight (starved past
 * it) sends nothing: its target asks the lease right before the write
 * (src/core/targets/fence.ts). INTERLOCK_CRASH_RELAY_LEASE_MS=150 on a busy
 * machine makes such lapses common (seed 3000091 applied a tier-2 effect twice
 * under the full suite before that check existed).
 */
const LEASE_MS = Number(process.env.INTERLOCK_CRASH_RELAY_LEASE_MS ?? 1000)
/** Longest a phase waits for effects to settle before the invariants judge what is there. */
const SETTLE_MS = 10_000
let key: KeyPair | undefined

/**
 * A relay whose claims are watched: an effect claimed while DISPATCHED had a
 * holder that lost its lease in flight (stopped, starved past LEASE_MS), which
 * the relay rightly treats as a crash there: for invariant 3 it is one.
 */
function relay(id: string, { store, targets }: { store: Store; targets: EffectTarget[] }, lapsed: Set<string>): Relay {
  key ??= generateKeyPair('relay', 'crash-harness')
  const watched = new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown
      if (prop !== 'claim' || typeof value !== 'function') return value
      return async (...args: Parameters<Store['claim']>) => {
        const claimed = await target.claim(...args)
        for (const c of claimed) if (c.snapshot.state === 'DISPATCHED') lapsed.add(c.snapshot.effect.id)
        return claimed
      }
    },
  })
  return new Relay({ store: watched, targets, relayId: id, key, policy: new RulesPolicy([]), leaseMs: LEASE_MS, pollMs: 5, concurrency: 4, retry: RETRY, sleep })
}

async function settled(outbox: Outbox, scene: Scene, until: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((r) => (timer = setTimeout(r, SETTLE_MS)))
  const all = Promise.all(scene.expectations.map((e) => outbox.result(e.effectId).catch(() => {}))).then(() => {})
  await Promise.race([all, until, timeout]).finally(() => clearTimeout(timer))
}

/** @param control a negative control (controls.ts) every relay and the reconcile pass apply */
export async function runRelaySchedule(rig: Rig, s: Schedule, control?: NegativeControl): Promise<ScheduleResult> {
  const scene = await setScene(rig, s, control)
  const ports = (store: Store, life: Life, targets = scene.targets) => processPorts(control, store, targets.map((t) => crashableTarget(t, life, scene.watch)))
  const outbox = new Outbox({ store: rig.store, targets: scene.targets, pollMs: 5 })
  const relays: Relay[] = []
  const lapsed = new Set<string>()
  try {
    // 1. The agent submits; the first relay dies at its boundary; a second may compete.
    const submits: (() => Promise<unknown>)[] = []
    for (const { input, plan } of scene.effects) for (let c = 0; c < plan.submits + (plan.second ? 1 : 0); c++) submits.push(() => outbox.submit(input))
    if (s.concurrent) await Promise.all(submits.map((f) => f()))
    else for (const f of submits) await f()
    const life = new Life(s.crashAt)
    const first = relay(`first-${s.seed}`, ports(crashableStore(rig.store, life), life), lapsed)
    relays.push(first)
    if (s.effects.some((p) => p.second)) {
      relays.push(relay(`second-${s.seed}`, ports(rig.second, new Life(undefined)), lapsed))
    }
    for (const r of relays) await r.start()
    await settled(outbox, scene, life.died)
    // The dead relay stops here for good (its loops only meet CrashSignal now).
    await first.stop().catch(() => {})
    const window = await inWindow(rig, scene, life)

    // 2. The outage is over; a fresh relay takes over. 3. One reconcile pass.
    rig.service.clearFaults()
    const recovering = relay(`recovering-${s.seed}`, ports(rig.store, new Life(undefined), scene.recoveryTargets), lapsed)
    relays.push(recovering)
    await recovering.start()
    await settled(outbox, scene, new Promise(() => {}))
    for (const r of relays) await r.stop().catch(() => {})
    await reconcileEffects({ ...ports(rig.store, new Life(undefined), scene.recoveryTargets), storeConfig: rig.config, retry: RETRY, sleep, olderThanMs: 0, concurrency: 2 })

    // 4. Judge. A lease lost in flight is the relay-mode form of a crash in the window.
    for (const id of lapsed) window.add(id)
    return await judge(rig, s, scene, life, window)
  } finally {
    for (const r of relays) await r.stop().catch(() => {})
    await outbox.close()
  }
}
