/**
 * Runs one schedule (schedule.ts) through inline gates and judges it:
 *
 * 1. the first process (a Gate inside a Life, crash-model.ts) submits the
 *    effects, the second process submits its duplicates, the service produces
 *    its faults, and the first process dies at its boundary;
 * 2. the service's faults are cleared (the outage is over), and a fresh
 *    process runs gate.recover(), as a restarted agent would;
 * 3. one reconcile-effects pass with no grace period, as the DBA's cron would;
 * 4. the invariants, against the service's ledger (scene.ts).
 */
import { Gate } from '../../src/core/gate.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { processPorts, type NegativeControl } from './controls.js'
import { crashableStore, crashableTarget, Life } from './crash-model.js'
import type { Rig } from './rig.js'
import type { Schedule } from './schedule.js'
import { inWindow, judge, RETRY, setScene, yieldTurn as sleep, type ScheduleResult } from './scene.js'

export type { ScheduleResult } from './scene.js'

/** @param control a negative control (controls.ts) every process applies */
export async function runSchedule(rig: Rig, s: Schedule, control?: NegativeControl): Promise<ScheduleResult> {
  const scene = await setScene(rig, s, control)
  const ports = (store: Parameters<typeof processPorts>[1], life: Life, targets = scene.targets) =>
    processPorts(control, store, targets.map((t) => crashableTarget(t, life, scene.watch)))

  // 1. The first process, which dies; the second, which lives.
  const life = new Life(s.crashAt)
  const first = new Gate({ ...ports(crashableStore(rig.store, life), life), retry: RETRY, sleep })
  const second = new Gate({ ...ports(rig.second, new Life(undefined)), retry: RETRY, sleep })
  const submits: (() => Promise<unknown>)[] = []
  for (const { input, plan } of scene.effects) {
    for (let c = 0; c < plan.submits; c++) submits.push(() => first.submit(input))
    if (plan.second) submits.push(() => second.submit(input))
  }
  if (s.concurrent) await Promise.allSettled(submits.map((f) => f()))
  else for (const f of submits) await f().catch(() => {})
  const window = await inWindow(rig, scene, life)

  // 2. Restart: the outage is over; a fresh process recovers. 3. One reconcile pass.
  rig.service.clearFaults()
  await new Gate({ ...ports(rig.store, new Life(undefined), scene.recoveryTargets), retry: RETRY, sleep }).recover()
  await reconcileEffects({ ...ports(rig.store, new Life(undefined), scene.recoveryTargets), storeConfig: rig.config, retry: RETRY, sleep, olderThanMs: 0, concurrency: 2 })

  // 4. Judge.
  return judge(rig, s, scene, life, window)
}
