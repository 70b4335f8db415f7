/**
 * Which Interlock effect a DBOS step is: its thread from the workflow, its
 * key from the step.
 *
 * - thread `dbos:<workflow ID>`: DBOS recovers a workflow under the ID it
 *   started with, so every re-execution of it submits into the same thread,
 *   and two workflows never share one. The thread also says which workflow
 *   waits on an effect (`workflowIdOf`), so whatever wakes it needs no table.
 * - key `<step name>#<step ID>`, and `@<workflow ID>` after it under a
 *   thread named with the `thread` option, which several workflows may share:
 *   DBOS numbers a workflow's steps in the order its (deterministic) code
 *   calls them, and re-runs a step under the number it first had (DBOS.stepID, "the current step number, within the
 *   current workflow": @dbos-inc/dbos-sdk's dbos.d.ts).
 *   Two steps of one workflow therefore never share a key, even with the same
 *   name and arguments, while a step DBOS runs again gets its own key back.
 *
 * The effect id hashes thread, target, action, args and key (core/effect.ts):
 * the same step re-run after a crash is the same effect, and the journal
 * answers for it instead of sending it again.
 */
import { createHash } from 'node:crypto'
import { DBOS } from '@dbos-inc/dbos-sdk'
import { InputError } from '../../core/errors.js'

export const THREAD_PREFIX = 'dbos:'

/** Effect threads name only letters, digits and ._:@/_- (core/effect.ts). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._:@/_-]{0,199}$/

export interface StepIdentity {
  thread: string
  key: string
}

export function dbosThread(workflowID: string): string {
  const thread = `${THREAD_PREFIX}${workflowID}`
  if (!NAME.test(thread)) {
    throw new InputError(`DBOS workflow ID ${JSON.stringify(workflowID)} cannot name an Interlock thread: "dbos:" and the ID must be 1-200 letters, digits or ._:@/_-`, {
      hint: 'Start the workflow with such an ID (DBOS.startWorkflow(fn, { workflowID })), or pass `thread` to name the thread yourself.',
      context: { workflowID },
    })
  }
  return thread
}

/** The workflow an effect's thread belongs to, when a DBOS step submitted it. */
export function workflowIdOf(thread: string): string | undefined {
  return thread.startsWith(THREAD_PREFIX) ? thread.slice(THREAD_PREFIX.length) : undefined
}

/**
 * The step's key. Under a thread named by the caller (`thread`), which other
 * workflows may name too, the key also carries the workflow: its steps are
 * numbered from 0 like every workflow's, and without it the same step of two
 * workflows with the same arguments would be one effect (the second one's
 * refund answered with the first one's receipt, and never made).
 */
export function stepKey(name: string, stepID: number, workflowID?: string): string {
  const key = `${name}#${stepID}`
  if (workflowID === undefined) return key
  const withWorkflow = `${key}@${workflowID}`
  return withWorkflow.length <= 200 ? withWorkflow : `${key}@sha256-${createHash('sha256').update(workflowID).digest('hex')}`
}

/**
 * The identity of the step running now. Outside a workflow a DBOS step is an
 * ordinary call with no ID that survives a crash: refused, since no retry of
 * it could be recognised as the same effect.
 */
export function currentStep(name: string, thread?: string): StepIdentity {
  const workflowID = DBOS.workflowID
  const stepID = DBOS.stepID
  if (workflowID === undefined || stepID === undefined || !DBOS.isInStep()) {
    throw new InputError(`Interlock step "${name}" ran outside a DBOS step of a workflow: it has no workflow and step ID to be recognised by when DBOS runs it again`, {
      hint: 'Call interlockStep() from a workflow function, or submitInStep() inside DBOS.runStep() or a step registered with DBOS.registerStep(), called from a workflow.',
    })
  }
  return thread === undefined ? { thread: dbosThread(workflowID), key: stepKey(name, stepID) } : { thread, key: stepKey(name, stepID, workflowID) }
}

/** The DBOS.recv topic a workflow waiting on an effect listens to: a message there makes it look again at once. */
export function wakeTopic(effectId: string): string {
  return `interlock:${effectId}`
}
