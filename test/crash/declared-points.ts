/**
 * The crash points, run against an API declared only in interlock.toml
 * (test/helpers/declared-apis.ts) and its emulator (src/emulators): the
 * machinery of crash-points.test.ts (serviceRig, submit-child.ts, the
 * invariants), with the targets read from the file by the child and by the
 * recovering parent alike, and judged by the emulator's own ledger.
 *
 * - every crash point × store, by the contract kit (agent-interlock/testing,
 *   src/testing/crash-points.ts) as a user runs it on a target of their own:
 *   a child SIGKILLed at the point, this process recovers (asking again while
 *   a search index has not caught up: settle_ms), then one more recovery and
 *   a reconcile pass change nothing;
 * - faults × store: the emulator's fault strikes the child's first request,
 *   the child carries on to COMMITTED (tiers 1, 2) or AMBIGUOUS (tier 3) and
 *   is killed right there; recovery changes nothing;
 * - a fault in recovery: the child is killed right after DISPATCHED, and the
 *   recovering process's first request meets the fault (tiers 1, 2);
 * - relay mode (crash-points-relay.test.ts's points): a relay child SIGKILLed
 *   at each point it passes, another relay takes the effect once the dead
 *   one's lease has run out, then one reconcile pass.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { CrashPoint } from '../../src/core/crash-points.js'
import { toEffect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { Gate } from '../../src/core/gate.js'
import { IN_FLIGHT_STATES } from '../../src/core/lifecycle.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { Relay } from '../../src/core/relay/relay.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTargets } from '../../src/core/targets/registry.js'
import type { Emulator, FaultMode } from '../../src/emulators/emulator.js'
import { crashPoints, registerContract } from '../../src/testing/index.js'
import { declaredTable, type DeclaredApi } from '../helpers/declared-apis.js'
import { planTargets } from './plan-targets.js'
import { serviceRig } from './point-rig.js'
import type { ChildPlan } from './submit-child.js'

const POINTS: CrashPoint[] = ['after-premises', 'after-dispatched', 'after-apply', 'after-committed']
const IN_FLIGHT_WINDOW: CrashPoint[] = ['after-dispatched', 'after-apply']
/** Faults whose request the service acted on before the answer was lost. */
const APPLIED: FaultMode[] = ['apply-then-drop', 'reset-after-apply', 'apply-then-5xx']
const FAULTS: FaultMode[] = ['reset-before-apply', '5xx', ...APPLIED]

export interface DeclaredScenario<S extends Emulator> {
  /** Names the runs (and the threads of their effects). */
  name: string
  start(): Promise<S>
  declared(service: S): DeclaredApi
  tier: Tier
  call(thread: string): EffectInput
  /** The service's own count of what it made for an effect id. */
  applications(service: S, id: string): number
  /** The child's retry settings (a lagging search needs tries spread over its settle time). */
  retry?: ChildPlan['retry']
}

export function declaredCrashPoints<S extends Emulator>(s: DeclaredScenario<S>): void {
  const rig = serviceRig<S>(`interlock-crash-${s.name}`, s.start)
  const targetName = s.call('name').target
  let file = ''
  let env: Record<string, string> = {}
  beforeAll(() => {
    const declared = s.declared(rig.service)
    file = join(rig.dir, 'interlock.toml')
    writeFileSync(file, declared.toml)
    env = declared.env
  })
  const plan = (store: ChildPlan['store'], input: EffectInput): ChildPlan => ({ store, config: file, configEnv: env, effects: [input], ...(s.retry ? { retry: s.retry } : {}) })
  const applied = (id: string) => s.applications(rig.service, id)

  /** A process started after the crash: targets from the same file, recovering until nothing is left in flight. */
  async function recovered(store: Store, id: string, fault?: FaultMode): Promise<Gate> {
    const gate = new Gate({ store, targets: createTargets(planTargets({ config: file, configEnv: env })).values(), retry: { maxAttempts: 3, backoffMs: 10 } })
    if (fault) rig.service.fault({ mode: fault })
    const deadline = Date.now() + 20_000
    // A search that has not caught up answers "not found yet": the effect stays in flight and is asked again.
    for (;;) {
      await gate.recover()
      const state = (await store.get(id))?.state
      if (!state || !IN_FLIGHT_STATES.includes(state) || Date.now() > deadline) break
    }
    rig.service.clearFaults()
    return gate
  }

  async function unchangedAfterMore(gate: Gate, store: Store, storeConfig: ChildPlan['store'], id: string): Promise<string> {
    const final = (await store.get(id))!.state
    const count = applied(id)
    await gate.recover()
    await reconcileEffects({ store, storeConfig, targets: createTargets(planTargets({ config: file, configEnv: env })).values(), olderThanMs: 0, concurrency: 1 })
    expect((await store.get(id))!.state).toBe(final)
    expect(applied(id)).toBe(count)
    return final
  }

  describe.each(rig.stores)(`${s.name} (tier ${s.tier}) crash points on %s`, (storeName, storeConfig) => {
    beforeAll(async () => {
      await install(storeConfig())
    })

    // Killed at each point, recovered, judged: the contract kit users run on their own targets.
    registerContract(
      crashPoints({
        name: targetName,
        service: { start: async () => rig.service },
        table: (svc) => declaredTable(s.declared(svc), targetName),
        env: (svc) => s.declared(svc).env,
        store: () => ({ ...storeConfig() }),
        ...(s.retry ? { gate: { max_attempts: s.retry.maxAttempts, backoff_ms: s.retry.backoffMs } } : {}),
        call: (thread) => s.call(thread),
        applications: (effect, svc) => s.applications(svc, effect.id),
      }),
      { it },
    )

    it.each(FAULTS)('%s on the child\'s first request: it settles, is killed there, and recovery changes nothing', async (mode) => {
      const input = s.call(`${s.name}-${storeName}-fault-${mode}`)
      const id = toEffect(input).id
      rig.service.fault({ mode })
      const point: CrashPoint = s.tier === 3 ? 'after-ambiguous' : 'after-committed'
      await rig.killAt('submit-child', point, plan(storeConfig(), input), `${s.name}-${storeName}-fault-${mode}`)
      const store = await openStore(storeConfig())
      let gate: Gate | undefined
      try {
        gate = await recovered(store, id)
        const final = await unchangedAfterMore(gate, store, storeConfig(), id)
        if (s.tier === 3) {
          // Tier 3 cannot tell: the answer was lost, whether or not the service acted.
          expect(final).toBe('AMBIGUOUS')
          expect(applied(id)).toBe(APPLIED.includes(mode) ? 1 : 0)
        } else {
          expect(final).toBe('COMMITTED')
          expect(applied(id)).toBe(1)
        }
        await rig.expectWhole(store, { id, tier: s.tier, unsure: true }, applied)
      } finally {
        await gate?.close()
        await store.close()
      }
    })

    it.each(POINTS)('relay killed %s: another relay and one reconcile pass leave the service with the right number', async (point) => {
      const input = s.call(`${s.name}-${storeName}-relay-${point}`)
      const id = toEffect(input).id
      await rig.killAt('relay-child', point, plan(storeConfig(), input), `${s.name}-${storeName}-relay-${point}`)
      const store = await openStore(storeConfig())
      const live = [...createTargets(planTargets({ config: file, configEnv: env })).values()]
      const relay = new Relay({ store, targets: live, relayId: 'recovering-relay', key: generateKeyPair('relay', 'recovering-relay'), policy: new RulesPolicy([]), leaseMs: 2000, pollMs: 20, retry: { maxAttempts: 3, backoffMs: 10 } })
      const outbox = new Outbox({ store, targets: live, pollMs: 20 })
      try {
        // Killed before its commit: the proposal waits under the dead relay's lease, nothing of its own journaled.
        if (point === 'after-premises') expect((await store.history(id)).map((r) => r.state)).toEqual(['PROPOSED'])
        await relay.start()
        const outcome = await outbox.result(id)
        await relay.stop()
        await reconcileEffects({ store, storeConfig: storeConfig(), targets: live, olderThanMs: 0, concurrency: 1 })
        const inWindow = IN_FLIGHT_WINDOW.includes(point)
        expect(outcome.status).toBe(s.tier === 3 && inWindow ? 'ambiguous' : 'committed')
        expect(applied(id)).toBe(s.tier === 3 && point === 'after-dispatched' ? 0 : 1)
        await rig.expectWhole(store, { id, tier: s.tier, crashedInWindow: inWindow }, applied)
      } finally {
        await relay.stop().catch(() => {})
        await outbox.close()
        for (const t of live) await t.close?.()
        await store.close()
      }
    })

    if (s.tier !== 3) {
      it.each(APPLIED)('killed after-dispatched, then %s on recovery\'s first request: applied once', async (mode) => {
        const input = s.call(`${s.name}-${storeName}-recovery-${mode}`)
        const id = toEffect(input).id
        await rig.killAt('submit-child', 'after-dispatched', plan(storeConfig(), input), `${s.name}-${storeName}-recovery-${mode}`)
        const store = await openStore(storeConfig())
        let gate: Gate | undefined
        try {
          gate = await recovered(store, id, mode)
          expect((await store.get(id))!.state).toBe('COMMITTED')
          expect(applied(id)).toBe(1)
          await unchangedAfterMore(gate, store, storeConfig(), id)
          await rig.expectWhole(store, { id, tier: s.tier, crashedInWindow: true, unsure: true }, applied)
        } finally {
          await gate?.close()
          await store.close()
        }
      })
    }
  })
}
