/**
 * An effect as a DBOS step, in two forms:
 *
 * - `interlockStep(source, name, effect)`, called from a workflow function:
 *   runs the submit as a checkpointed step (DBOS.runStep), then, while the
 *   effect is HELD for operators or in flight, waits in the workflow, durably
 *   (DBOS.recv with a timeout: a durable sleep that a message on the effect's
 *   wake topic cuts short), and looks again in a step of its own; it returns
 *   the COMMITTED outcome, or throws an InterlockStepError for AMBIGUOUS,
 *   REJECTED and FAILED. No step is retried for any of it: a wait is not an
 *   error, and the errors are thrown by the workflow after the outcome is
 *   checkpointed.
 * - `submitInStep(source, name, effect)`, called inside a step of your own
 *   (DBOS.runStep's body, or a function registered with DBOS.registerStep):
 *   the submit alone; COMMITTED, HELD and in-flight outcomes are returned,
 *   AMBIGUOUS, REJECTED and FAILED thrown.
 *
 * Either way the effect is named by the workflow and the step (identity.ts),
 * so when DBOS runs the step again after a crash, the journal answers for it:
 * COMMITTED with its receipt if it landed (nothing sent), and if it was in
 * flight, carried on by its tier: sent again under the same idempotency key
 * (tier 1), looked for at the target (tier 2), or AMBIGUOUS (tier 3).
 */
import { DBOS, type StepConfig } from '@dbos-inc/dbos-sdk'
import type { EffectInput } from '../../core/effect.js'
import { InputError } from '../../core/errors.js'
import type { Interlock } from '../../core/interlock.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import { interlockShouldRetry, stepError, waitTimeoutError } from './errors.js'
import { currentStep, wakeTopic } from './identity.js'
import type { Place } from './outcome-text.js'
import { lookAgain, submitEffect, type RunMode } from './source.js'

/** The effect a step makes: its thread and key come from the workflow and the step. */
export type StepEffect = Omit<EffectInput, 'thread' | 'key'>

export type CommittedOutcome = Extract<SubmitOutcome, { status: 'committed' }>
/** What a step may go on from: COMMITTED, or still waiting (HELD, in flight). */
export type StepOutcome = Extract<SubmitOutcome, { status: 'committed' | 'held' | 'in_flight' }>

export interface SubmitInStepOptions {
  /** 'inline' (default): this process journals and sends (interlock.gate). 'outbox': it proposes and a relay sends (interlock.outbox). */
  mode?: RunMode
  /** The effect's thread instead of `dbos:<workflow ID>`. */
  thread?: string
}

export interface InterlockStepOptions extends SubmitInStepOptions {
  /** A HELD effect: 'wait' (default) for the operators' release, durably; 'fail': throw at once. */
  held?: 'wait' | 'fail'
  /** Longest sleep between looks while the effect waits (default 30000 ms); a message on its wake topic ends a sleep early. */
  pollMs?: number
  /** Stop waiting after this long and throw (default: wait as long as it takes). */
  waitTimeoutMs?: number
  /** DBOS step settings of the submit step (retries): retrying it is safe, the journal answers a repeat. */
  step?: Omit<StepConfig, 'name'>
}

/** The event a waiting workflow sets (DBOS.getEvent(workflowID, INTERLOCK_EVENT)): which effect it waits on, and why. */
export const INTERLOCK_EVENT = 'interlock'

const DEFAULT_POLL_MS = 30_000

export async function submitInStep(interlock: Interlock, name: string, effect: StepEffect, options: SubmitInStepOptions = {}): Promise<StepOutcome> {
  checkName(name)
  const o = await submitEffect(interlock, { ...effect, ...currentStep(name, options.thread) }, options.mode ?? 'inline')
  if (o.status === 'ambiguous' || o.status === 'rejected' || o.status === 'failed') throw stepError(o, place(interlock, name, effect))
  return o
}

export async function interlockStep(interlock: Interlock, name: string, effect: StepEffect, options: InterlockStepOptions = {}): Promise<CommittedOutcome> {
  checkName(name)
  if (!DBOS.isInWorkflow()) {
    throw new InputError(`interlockStep("${name}") is called from a DBOS workflow function, outside its steps`, {
      hint: 'Inside a step of your own (DBOS.runStep, DBOS.registerStep), call submitInStep() instead.',
    })
  }
  const mode = options.mode ?? 'inline'
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS
  const submitted = await DBOS.runStep(() => submitEffect(interlock, { ...effect, ...currentStep(name, options.thread) }, mode), stepConfig(name, options.step))
  let o: SubmitOutcome = submitted
  let started: number | undefined
  let shown = ''
  for (;;) {
    if (o.status === 'committed' || o.status === 'ambiguous' || o.status === 'rejected' || o.status === 'failed' || (o.status === 'held' && options.held === 'fail')) {
      if (shown) await DBOS.setEvent(INTERLOCK_EVENT, waitingOn(name, o))
      if (o.status === 'committed') return o
      throw stepError(o, place(interlock, name, effect))
    }
    // HELD or in flight: wait here, in the workflow, where waiting costs no retry and survives a restart.
    const now = await DBOS.now()
    started ??= now
    if (options.waitTimeoutMs !== undefined && now - started >= options.waitTimeoutMs) throw waitTimeoutError(o, place(interlock, name, effect), now - started)
    const mark = o.status === 'in_flight' ? `${o.state}:${o.notBefore ?? ''}` : 'HELD'
    if (mark !== shown) {
      await DBOS.setEvent(INTERLOCK_EVENT, waitingOn(name, o))
      shown = mark
    }
    let waitMs = o.status === 'in_flight' && o.notBefore ? Math.max(0, Date.parse(o.notBefore) - now) : pollMs
    if (options.waitTimeoutMs !== undefined) waitMs = Math.min(waitMs, started + options.waitTimeoutMs - now)
    await DBOS.recv(wakeTopic(o.effectId), { timeoutSeconds: Math.max(waitMs, 1) / 1000 })
    const id = o.effectId
    o = await DBOS.runStep(() => lookAgain(interlock, id, mode, Date.now()), { name: `${name}:look` })
  }
}

function stepConfig(name: string, step: InterlockStepOptions['step']): StepConfig & { name: string } {
  if (!step) return { name }
  const own = step.shouldRetry
  return { ...step, name, shouldRetry: async (e) => interlockShouldRetry(e) && (own ? await own(e) : true) }
}

function waitingOn(step: string, o: SubmitOutcome): Record<string, string> {
  const v: Record<string, string> = { step, effectId: o.effectId, status: o.status }
  if (o.status === 'held') v.rule = o.rule
  if (o.status === 'in_flight') {
    v.state = o.state
    if (o.notBefore) v.notBefore = o.notBefore
  }
  return v
}

/** How errors name the step: its effect, the step and its workflow; secrets of the config scrubbed. */
function place(interlock: Interlock, name: string, effect: StepEffect): Place {
  const wf = DBOS.workflowID
  return { step: `step "${name}"${wf ? ` of DBOS workflow ${wf}` : ''}`, target: effect.target, action: effect.action, scrub: (t) => interlock.scrub(t) }
}

function checkName(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > 100) {
    throw new InputError(`an Interlock step needs a name of 1-100 characters (got ${JSON.stringify(name)})`, { hint: 'Name it after what it does, e.g. "refund".' })
  }
}
