/**
 * `interlockSubmit(interlock, effect)`: an effect from inside a Temporal activity.
 *
 * Temporal retries an activity whose worker died (detected by its heartbeat
 * or start-to-close timeout) with the same activity id in the same workflow
 * run; an activity that applied its effect and died before completing
 * applies it again. Here the effect is journaled by Interlock before it is
 * sent, under an id made from those ids, so the next attempt finds it and
 * carries it on by its tier instead (durable/carry.ts).
 *
 * - thread `temporal:<workflow id>`; key `<run id>/<activity id>/<name>#<n>`:
 *   the same on every attempt of this activity; a new run (continue-as-new,
 *   reset) is new effects, as Temporal means it to be;
 * - while the effect waits (HELD for operators, or the gate between tries)
 *   the activity heartbeats `{ interlockEffectId, waiting }`, so a heartbeat
 *   timeout tells a dead worker from a waiting one and cancellation reaches
 *   it; cancelled while HELD, it throws Temporal's CancelledFailure and
 *   nothing was sent (the effect stays HELD: an operator denies it);
 * - the gate's waits between tries are cancellable when the gate sleeps with
 *   `activitySleep` (`openInterlock({ sleep: activitySleep })`): cancelled there, the effect stays journaled in flight
 *   and recovery (`interlock reconcile-effects`) finishes it by its tier;
 * - outcomes that are not COMMITTED: failures.ts.
 */
import { Context } from '@temporalio/activity'
import type { EffectInput } from '../../core/effect.js'
import { toEffect } from '../../core/effect.js'
import type { Interlock } from '../../core/interlock.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import { isRefusal, keyName, look, Ordinals, threadName, type Committed, type Held, type RunMode, type StepEffect } from '../durable/index.js'
import { failureOf, refusalOf } from './failures.js'

export interface InterlockSubmitOptions {
  /** Names the effect within the activity, in its key (default `<target>.<action>`). */
  name?: string
  /** 'wait' (default): an effect HELD for operators is waited for, heartbeating; 'return': the HELD outcome is returned to the workflow. */
  held?: 'wait' | 'return'
  /** Waits between looks at a HELD effect: the first, doubled up to the longest (default 1 s, 30 s). */
  poll?: { firstMs?: number; maxMs?: number }
  /** How often the activity heartbeats while the effect waits (default 1 s; Temporal throttles what it sends). */
  heartbeatMs?: number
  /** 'inline' (default): this process journals and sends (`interlock.gate`). 'outbox': it proposes and a relay sends (`interlock.outbox`). */
  mode?: RunMode
  /** Outbox mode: the longest one look waits for a relay (default 10 s). */
  waitMs?: number
}

const ordinals = new Ordinals<Context>()

export function interlockSubmit(interlock: Interlock, effect: StepEffect, options?: InterlockSubmitOptions & { held?: 'wait' }): Promise<Committed>
export function interlockSubmit(interlock: Interlock, effect: StepEffect, options: InterlockSubmitOptions & { held: 'return' }): Promise<Committed | Held>
export async function interlockSubmit(interlock: Interlock, effect: StepEffect, options: InterlockSubmitOptions = {}): Promise<Committed | Held> {
  const ctx = Context.current()
  const { workflowExecution: run, activityId } = ctx.info
  if (!run) {
    throw refusalOf(new Error('interlockSubmit needs an activity a workflow scheduled: a standalone activity has no workflow id to name its effect by'), effect)
  }
  const name = options.name ?? `${effect.target}.${effect.action}`
  const input: EffectInput = { ...effect, thread: threadName('temporal', ':', run.workflowId), key: keyName(`${run.runId}/${activityId}/${name}#${ordinals.next(ctx, name)}`) }
  let effectId: string
  try {
    effectId = toEffect(input).id
  } catch (e) {
    if (isRefusal(e)) throw refusalOf(e as Error, input)
    throw e
  }

  let waiting = 'submit'
  const beat = () => ctx.heartbeat({ interlockEffectId: effectId, waiting })
  beat()
  const timer = setInterval(beat, options.heartbeatMs ?? 1_000)
  try {
    let outcome = await lookOrRefuse(interlock, input, options)
    const firstMs = options.poll?.firstMs ?? 1_000
    const maxMs = options.poll?.maxMs ?? 30_000
    for (let n = 0; outcome.status === 'held' && options.held !== 'return'; n++) {
      waiting = 'held'
      beat()
      // Throws CancelledFailure when the activity is cancelled: nothing was sent.
      await ctx.sleep(Math.min(firstMs * 2 ** Math.min(n, 30), maxMs))
      waiting = 'submit'
      outcome = await lookOrRefuse(interlock, input, options)
    }
    if (outcome.status === 'committed' || outcome.status === 'held') return outcome
    throw failureOf(outcome, input)
  } finally {
    clearInterval(timer)
  }
}

async function lookOrRefuse(interlock: Interlock, input: EffectInput, options: InterlockSubmitOptions): Promise<SubmitOutcome> {
  try {
    return await look(interlock, input, { mode: options.mode, waitMs: options.waitMs })
  } catch (e) {
    if (isRefusal(e)) throw refusalOf(e as Error, input)
    throw e
  }
}

/**
 * A sleep for the gate an activity submits through (`openInterlock({ sleep:
 * activitySleep })`, or `new Gate({ sleep: activitySleep })`): inside an
 * activity, Temporal's cancellable sleep, so a cancelled activity stops
 * between tries; elsewhere a plain timer.
 */
export function activitySleep(ms: number): Promise<void> {
  let ctx: Context
  try {
    ctx = Context.current()
  } catch {
    return new Promise((resolve) => setTimeout(resolve, ms))
  }
  return ctx.sleep(ms)
}
