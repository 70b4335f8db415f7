/**
 * Runs one schedule (schedule.ts) on a rig and judges it (invariants.ts):
 *
 * 1. the first process (a Gate inside a Life, crash-model.ts) submits the
 *    effects, the second process submits its duplicates, the service produces
 *    its faults, and the first process dies at its boundary;
 * 2. the service's faults are cleared (the outage is over), and a fresh
 *    process runs gate.recover(), as a restarted agent would;
 * 3. one reconcile-effects pass with no grace period, as the DBA's cron would;
 * 4. the invariants, against the service's ledger.
 * Then AMBIGUOUS effects are resolved by the ledger, as an operator would, so
 * a long soak's recoveries do not re-read thousands of waiting effects.
 */
import { toEffect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import type { Store } from '../../src/core/stores/store.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { crashableStore, crashableTarget, Life, type SendWatch } from './crash-model.js'
import { checkInvariants, type Expectation } from './invariants.js'
import type { Rig } from './rig.js'
import type { Schedule } from './schedule.js'

export interface ScheduleResult {
  seed: number
  violations: string[]
  crash?: string
  /** Final state per effect, for the trace. */
  states: string[]
}

const RETRY = { maxAttempts: 3, backoffMs: 1 }
const sleep = () => new Promise<void>((r) => setImmediate(r))

/** Short timeouts: a 'hang' fault costs one each time it strikes. */
function targets(rig: Rig, timeoutMs = 150): EffectTarget[] {
  const url = rig.service.url
  const common = { timeoutMs, connectTimeoutMs: 1000, premiseUrl: `${url}/resources/{args.doc}` }
  return [
    new HttpTarget('t1', { ...common, tier: 1, url: `${url}/idempotent` }),
    new HttpTarget('t2', { ...common, tier: 2, url: `${url}/plain`, queryUrl: `${url}/applied/{effect_id}` }),
    new HttpTarget('t3', { ...common, tier: 3, url: `${url}/plain` }),
  ]
}

export async function runSchedule(rig: Rig, s: Schedule): Promise<ScheduleResult> {
  const plain = targets(rig)
  const sentEarly = new Set<string>()
  const unsure = new Set<string>()
  // Ground truth for [6]: asked of the store itself, not of the process sending.
  const watch: SendWatch = {
    beforeSend: async (effect) => {
      if ((await rig.store.get(effect.id))?.state !== 'DISPATCHED') sentEarly.add(effect.id)
    },
    unsure: (effect) => unsure.add(effect.id),
  }
  const inputs = s.effects.map((p): EffectInput & { plan: typeof p } => ({
    thread: `s${s.seed}`,
    target: `t${p.tier}`,
    action: 'apply',
    args: { doc: `s${s.seed}e${p.n}`, n: p.n },
    plan: p,
  }))
  for (const i of inputs) rig.service.setResource(String(i.args.doc), { version: 1 })
  const expectations: Expectation[] = inputs.map((i) => ({ effectId: toEffect(i).id, tier: i.plan.tier as Tier, stale: i.plan.stale }))

  // Premises are captured at decision time (by the harness, unhurried); a stale one changes right after.
  const capturing = targets(rig, 10_000)
  const probe = new Gate({ store: rig.store, targets: capturing })
  const premises = await Promise.all(inputs.map((i) => probe.capture(i.target, i.action, i.args)))
  for (const i of inputs) if (i.plan.stale) rig.service.setResource(String(i.args.doc), { version: 2 })
  for (const f of s.faults) rig.service.fault({ mode: f.mode, route: f.route, times: f.times })

  // 1. The first process, which dies; the second, which lives.
  const life = new Life(s.crashAt)
  const first = new Gate({ store: crashableStore(rig.store, life), targets: plain.map((t) => crashableTarget(t, life, watch)), retry: RETRY, sleep })
  const secondTargets = plain.map((t) => crashableTarget(t, new Life(undefined), watch))
  const second = new Gate({ store: rig.second, targets: secondTargets, retry: RETRY, sleep })
  const submits: (() => Promise<unknown>)[] = []
  inputs.forEach((i, k) => {
    const { plan, ...input } = i
    const withPremises = { ...input, premises: premises[k]! }
    for (let c = 0; c < plan.submits; c++) submits.push(() => first.submit(withPremises))
    if (plan.second) submits.push(() => second.submit(withPremises))
  })
  if (s.concurrent) await Promise.allSettled(submits.map((f) => f()))
  else for (const f of submits) await f().catch(() => {})
  const inWindow = new Set<string>()
  if (life.crash) {
    for (const e of expectations) if ((await rig.store.get(e.effectId))?.state === 'DISPATCHED') inWindow.add(e.effectId)
  }

  // 2. Restart: the outage is over; a fresh process recovers. 3. One reconcile pass.
  rig.service.clearFaults()
  const next = plain.map((t) => crashableTarget(t, new Life(undefined), watch))
  await new Gate({ store: rig.store, targets: next, retry: RETRY, sleep }).recover()
  await reconcileEffects({ store: rig.store, storeConfig: rig.config, targets: next, retry: RETRY, sleep, olderThanMs: 0, concurrency: 2 })

  // 4. Judge.
  for (const id of rig.service.faultsHit.keys()) unsure.add(id)
  const violations = await checkInvariants(rig.store, {
    effects: expectations,
    applications: (id) => rig.service.count(id),
    crashedInWindow: inWindow,
    unsure,
    sentEarly,
  })
  const states: string[] = []
  for (const e of expectations) {
    const snap = await rig.store.get(e.effectId)
    states.push(snap?.state ?? '-')
    if (snap?.state === 'AMBIGUOUS') await resolve(rig.store, e.effectId, rig.service.count(e.effectId))
  }
  for (const t of [...plain, ...capturing]) await t.close?.()
  return { seed: s.seed, violations, crash: life.crash && `${life.crash.point} of ${life.crash.effectId.slice(0, 12)} (boundary ${life.crash.boundary})`, states }
}

/** An operator's resolution, from the ledger: what the service says happened. */
async function resolve(store: Store, effectId: string, applied: number): Promise<void> {
  await store.append([{ effectId, from: 'AMBIGUOUS', to: applied > 0 ? 'COMMITTED' : 'FAILED', data: { resolvedBy: 'crash-harness', applied } }])
}
