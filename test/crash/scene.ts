/**
 * What every schedule shares, whatever runs it (inline gate or relay): the
 * targets, the effects with their premises captured (and made stale where
 * the schedule says), the service's faults armed, the evidence collected
 * while it runs, and the judging at the end (invariants.ts) followed by an
 * operator's resolution of each AMBIGUOUS effect from the ledger (so a long
 * soak's recoveries do not re-read thousands of waiting effects).
 */
import { toEffect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import type { Store } from '../../src/core/stores/store.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import type { NegativeControl } from './controls.js'
import type { Life, SendWatch } from './crash-model.js'
import { checkInvariants, type Expectation } from './invariants.js'
import type { Rig } from './rig.js'
import type { EffectPlan, Schedule } from './schedule.js'

export const RETRY = { maxAttempts: 3, backoffMs: 1 }
export const yieldTurn = () => new Promise<void>((r) => setImmediate(r))

export interface ScheduleResult {
  seed: number
  violations: string[]
  crash?: string
  /** Final state per effect, for the trace. */
  states: string[]
}

export interface Scene {
  /** Each effect with its captured premises, and its plan. */
  effects: { input: EffectInput; plan: EffectPlan }[]
  expectations: Expectation[]
  /** The service's targets (each process wraps them in its own Life). */
  targets: EffectTarget[]
  /**
   * The same targets with ordinary timeouts, for recovery and reconcile: the
   * outage is over by then, and a 100 ms timeout on a saturated machine would
   * only leave effects in flight (correctly: a premise that cannot be checked
   * is not dispatched), which is not what invariant 4 asks about.
   */
  recoveryTargets: EffectTarget[]
  watch: SendWatch
  sentEarly: Set<string>
  unsure: Set<string>
  close(): Promise<void>
}

/** Short timeouts: a 'hang' fault costs one each time it strikes. */
function targets(rig: Rig, timeoutMs = 100): EffectTarget[] {
  const url = rig.service.url
  const common = { timeoutMs, connectTimeoutMs: 1000, premiseUrl: `${url}/resources/{args.doc}` }
  return [
    new HttpTarget('t1', { ...common, tier: 1, url: `${url}/idempotent` }),
    new HttpTarget('t2', { ...common, tier: 2, url: `${url}/plain`, queryUrl: `${url}/applied/{effect_id}` }),
    new HttpTarget('t3', { ...common, tier: 3, url: `${url}/plain` }),
  ]
}

/** @param control a negative control: the targets every process uses are its decorated ones */
export async function setScene(rig: Rig, s: Schedule, control?: NegativeControl): Promise<Scene> {
  const sentEarly = new Set<string>()
  const unsure = new Set<string>()
  // Ground truth for [6]: asked of the store itself, not of the process sending.
  const watch: SendWatch = {
    beforeSend: async (effect) => {
      if ((await rig.store.get(effect.id))?.state !== 'DISPATCHED') sentEarly.add(effect.id)
    },
    unsure: (effect) => unsure.add(effect.id),
  }
  const raw = s.effects.map((plan) => ({
    input: { thread: `s${s.seed}`, target: `t${plan.tier}`, action: 'apply', args: { doc: `s${s.seed}e${plan.n}`, n: plan.n } } as EffectInput,
    plan,
  }))
  for (const e of raw) rig.service.setResource(String(e.input.args.doc), { version: 1 })
  // Premises are captured at decision time (by the harness, unhurried); a stale one changes right after.
  const capturing = targets(rig, 10_000)
  const probe = new Gate({ store: rig.store, targets: capturing })
  const premises = await Promise.all(raw.map((e) => probe.capture(e.input.target, e.input.action, e.input.args)))
  for (const e of raw) if (e.plan.stale) rig.service.setResource(String(e.input.args.doc), { version: 2 })
  for (const f of s.faults) rig.service.fault({ mode: f.mode, route: f.route, times: f.times })
  const effects = raw.map((e, k) => ({ input: { ...e.input, premises: premises[k]! }, plan: e.plan }))
  const plain = targets(rig)
  const unhurried = targets(rig, 5_000)
  const decorate = (ts: EffectTarget[]) => (control ? ts.map((t) => control.target(t)) : ts)
  return {
    effects,
    expectations: effects.map((e) => ({ effectId: toEffect(e.input).id, tier: e.plan.tier as Tier, stale: e.plan.stale })),
    targets: decorate(plain),
    recoveryTargets: decorate(unhurried),
    watch,
    sentEarly,
    unsure,
    close: async () => {
      for (const t of [...plain, ...unhurried, ...capturing]) await t.close?.()
    },
  }
}

/** Effects a crash left DISPATCHED: the window tier 3 cannot close. */
export async function inWindow(rig: Rig, scene: Scene, life: Life): Promise<Set<string>> {
  const found = new Set<string>()
  if (!life.crash) return found
  for (const e of scene.expectations) if ((await rig.store.get(e.effectId))?.state === 'DISPATCHED') found.add(e.effectId)
  return found
}

export async function judge(rig: Rig, s: Schedule, scene: Scene, life: Life, window: Set<string>): Promise<ScheduleResult> {
  for (const id of rig.service.faultsHit.keys()) scene.unsure.add(id)
  const violations = await checkInvariants(rig.store, {
    effects: scene.expectations,
    applications: (id) => rig.service.count(id),
    crashedInWindow: window,
    unsure: scene.unsure,
    sentEarly: scene.sentEarly,
  })
  const states: string[] = []
  for (const e of scene.expectations) {
    const snap = await rig.store.get(e.effectId)
    states.push(snap?.state ?? '-')
    if (snap?.state === 'AMBIGUOUS') await resolve(rig.store, e.effectId, rig.service.count(e.effectId))
  }
  await scene.close()
  const crash = life.crash && `${life.crash.point} of ${life.crash.effectId.slice(0, 12)} (boundary ${life.crash.boundary})`
  return { seed: s.seed, violations, crash, states }
}

/** An operator's resolution, from the ledger: what the service says happened. */
async function resolve(store: Store, effectId: string, applied: number): Promise<void> {
  await store.append([{ effectId, from: 'AMBIGUOUS', to: applied > 0 ? 'COMMITTED' : 'FAILED', data: { resolvedBy: 'crash-harness', applied } }])
}
