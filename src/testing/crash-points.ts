/**
 * The crash points: for each, a child process submits one effect through a
 * gate and is SIGKILLed at the point (crash-child.ts); this process then
 * recovers with the real engine (a Gate over the same journal) until nothing
 * is in flight, and judges by the service's own record:
 * - after-premises: nothing journaled, nothing sent; the same submit again
 *   names the same effect and commits it once;
 * - after-dispatched, after-apply: tiers 1 and 2 end COMMITTED, made once;
 *   tier 3 ends AMBIGUOUS, made 0 times (killed before apply) or once (after);
 * - after-committed: COMMITTED, made once.
 * Then another recovery and a reconcile-effects pass change nothing, and the
 * journal verifies.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CrashPoint } from '../core/crash-points.js'
import { toEffect, type EffectInput, type Tier } from '../core/effect.js'
import { InputError } from '../core/errors.js'
import { Gate } from '../core/gate.js'
import type { State } from '../core/lifecycle.js'
import { reconcileEffects } from '../core/reconcile/reconcile.js'
import { install } from '../core/stores/migrate.js'
import { openStore } from '../core/stores/open.js'
import type { ContractCase } from './case.js'
import type { ChildPlan } from './crash-child.js'
import { DEFAULT_TIMEOUT_MS, type TargetUnderTest } from './options.js'
import { journalProblem, recoverUntilSettled } from './recovery.js'
import { runCrashChild } from './spawn-child.js'
import { openWorld, type World } from './world.js'

/** The durable boundaries an effect no rule holds passes, in order. */
export const KIT_CRASH_POINTS = ['after-premises', 'after-dispatched', 'after-apply', 'after-committed'] as const satisfies readonly CrashPoint[]
export type KitCrashPoint = (typeof KIT_CRASH_POINTS)[number]

export interface CrashPointsOptions<S> extends TargetUnderTest<S> {
  /** Some of the points only (default: all four). */
  points?: readonly KitCrashPoint[]
}

/** What recovery must leave: the effect's state and how many times the service made it. */
export function expectedAfter(tier: Tier, point: KitCrashPoint): { state: State; applications: number } {
  if (tier === 3 && point === 'after-dispatched') return { state: 'AMBIGUOUS', applications: 0 }
  if (tier === 3 && point === 'after-apply') return { state: 'AMBIGUOUS', applications: 1 }
  return { state: 'COMMITTED', applications: 1 }
}

export function crashPoints<S = undefined>(options: CrashPointsOptions<S>): ContractCase[] {
  const points = options.points ?? KIT_CRASH_POINTS
  for (const p of points) {
    if (!(KIT_CRASH_POINTS as readonly string[]).includes(p)) {
      throw new InputError(`crashPoints: unknown point ${JSON.stringify(p)}; expected some of ${KIT_CRASH_POINTS.join(', ')}`)
    }
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  return points.map((point) => ({
    name: `${options.name}: killed ${point}, recovery leaves the service with the right count`,
    timeoutMs,
    run: () => killedAt(options, point, Date.now() + timeoutMs - 1000),
  }))
}

async function killedAt<S>(options: CrashPointsOptions<S>, point: KitCrashPoint, deadline: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-kit-'))
  const given = typeof options.store === 'function' ? options.store() : options.store
  let world: World<S> | undefined
  try {
    world = await openWorld(options, { store: given ?? { path: join(dir, 'journal.db') } })
    await install(world.config.store)
    const input = await world.input(`crash-${point}`)
    const effect = toEffect(input)
    const tier = world.tierOf(effect.action)

    const planFile = join(dir, 'plan.json')
    writeFileSync(planFile, JSON.stringify({ declaration: world.declaration, input } satisfies ChildPlan), { mode: 0o600 })
    const end = await runCrashChild(planFile, point, Math.max(1000, deadline - Date.now() - 2000))
    assert.equal(end.signal, 'SIGKILL', `the child armed at ${point} was not killed there: it ${end.signal ? `ended by ${end.signal}` : `exited ${end.code}`}, so it never passed the point.\nstdout: ${end.stdout}\nstderr: ${end.stderr}`)

    await recoverAndJudge(world, input, tier, point, deadline)
  } finally {
    await world?.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function recoverAndJudge<S>(world: World<S>, input: EffectInput, tier: Tier, point: KitCrashPoint, deadline: number): Promise<void> {
  const effect = toEffect(input)
  const storeConfig = world.config.store
  const store = await openStore(storeConfig)
  const retry = world.config.gate
  const gate = new Gate({ store, targets: [world.target()], retry })
  const id = effect.id.slice(0, 12)
  try {
    if (point === 'after-premises') {
      assert.equal(await store.get(effect.id), undefined, `killed after-premises, before its first commit, yet effect ${id} is journaled`)
      assert.equal(await world.applications(effect), 0, `killed after-premises, before anything was journaled or sent, yet the service made effect ${id}`)
      // The agent, restarted, submits the same decision again: the same effect.
      const again = await gate.submit(input)
      assert.equal(again.status, 'committed', `killed after-premises, the same submit again ended ${again.status}: ${JSON.stringify(again)}`)
    }
    const state = await recoverUntilSettled(gate, store, effect.id, deadline)
    const made = await world.applications(effect)
    const want = expectedAfter(tier, point)
    const what = `tier ${tier}, killed ${point}: after recovery effect ${id} is ${state ?? 'not journaled'} and the service made it ${made} times`
    assert.equal(state, want.state, `${what}; expected ${want.state}${tier === 2 && state !== 'COMMITTED' ? ' (a tier-2 query must tell recovery whether the effect happened)' : ''}`)
    assert.equal(made, want.applications, `${what}; expected ${want.applications}${why(tier, made, want.applications)}`)

    // Once more, and a reconcile pass: nothing left to do.
    await gate.recover()
    await reconcileEffects({ store, storeConfig, targets: [gate.target(effect.target)], retry, olderThanMs: 0, concurrency: 1 })
    const finalState = (await store.get(effect.id))?.state
    const finalMade = await world.applications(effect)
    assert.equal(finalState, state, `tier ${tier}, killed ${point}: another recovery and a reconcile pass moved effect ${id} from ${state} to ${finalState}`)
    assert.equal(finalMade, made, `tier ${tier}, killed ${point}: another recovery and a reconcile pass made the service make effect ${id} again (${made} → ${finalMade})`)
    const broken = await journalProblem(store, effect.id)
    assert.equal(broken, undefined, `the journal does not verify after recovery: ${broken}`)
  } finally {
    // Nothing of the gate's is still running here; its target is the world's to close.
    await store.close()
  }
}

function why(tier: Tier, made: number, want: number): string {
  if (made <= want) return ''
  if (tier === 1) return ' (recovery re-applies a tier-1 effect under the same effect id: the service must make it once)'
  if (tier === 2) return ' (recovery asks a tier-2 query first: it must find the effect apply made, or it is applied again)'
  return ''
}
