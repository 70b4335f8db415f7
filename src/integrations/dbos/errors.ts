/**
 * The errors a DBOS step through Interlock ends with, one per outcome that
 * must stop the workflow rather than be retried.
 *
 * DBOS has no error kind of its own that a step retry skips: a step is not
 * retried unless its config says `retriesAllowed`, and then `shouldRetry`
 * decides (@dbos-inc/dbos-sdk step.d.ts). `interlockStep` throws these from
 * the workflow function, after the step's outcome is checkpointed, so no
 * step retry ever sees them; inside a step of your own, `submitInStep`
 * throws them, and `interlockShouldRetry` keeps a retrying step from trying
 * again (which would be harmless anyway: the journal answers a repeat with
 * the same outcome and sends nothing).
 *
 * DBOS records a workflow's error as its JSON (serialize-error, which uses
 * toJSON) and gives back a plain Error with those fields: `name`, `code`,
 * `status`, `effectId`, `hint` and `context` survive the trip, the class does
 * not. Tell them apart with `isInterlockStepError` (by code), not
 * `instanceof`.
 */
import { ExitCode, InputError, InterlockError, type InterlockErrorOptions } from '../../core/errors.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import { outcomeText, type Place } from './outcome-text.js'

/** Why the step stopped: the effect's outcome, or a wait that ran out. */
export type StepStopStatus = 'ambiguous' | 'rejected' | 'failed' | 'held' | 'wait-timeout'

const CODE_PREFIX = 'E_EFFECT_'

const EXIT: Record<StepStopStatus, ExitCode> = {
  ambiguous: ExitCode.AMBIGUOUS,
  rejected: ExitCode.CONFLICT,
  failed: ExitCode.TARGET,
  held: ExitCode.FAILURE,
  'wait-timeout': ExitCode.FAILURE,
}

export class InterlockStepError extends InterlockError {
  readonly status: StepStopStatus
  readonly effectId: string
  readonly outcome: SubmitOutcome

  constructor(status: StepStopStatus, outcome: SubmitOutcome, message: string, options: InterlockErrorOptions = {}) {
    super(`${CODE_PREFIX}${status.toUpperCase().replace(/-/g, '_')}`, EXIT[status], message, options)
    this.status = status
    this.effectId = outcome.effectId
    this.outcome = outcome
  }

  /** What DBOS keeps of it (and `--json` prints): enough to act on without the class. */
  override toJSON(): Record<string, unknown> {
    return { name: this.name, ...super.toJSON(), status: this.status, effectId: this.effectId }
  }
}

/** The error for an outcome that ends the step: AMBIGUOUS, REJECTED, FAILED, or HELD when the step may not wait. */
export function stepError(outcome: SubmitOutcome & { status: 'ambiguous' | 'rejected' | 'failed' | 'held' }, at: Place): InterlockStepError {
  const said = outcomeText(outcome, at)
  return new InterlockStepError(outcome.status, outcome, said.message, { hint: said.hint, context: { effectId: outcome.effectId } })
}

/** The step waited as long as it was allowed and the effect is still HELD or in flight. */
export function waitTimeoutError(outcome: SubmitOutcome & { status: 'held' | 'in_flight' }, at: Place, waitedMs: number): InterlockStepError {
  const said = outcomeText(outcome, at)
  return new InterlockStepError('wait-timeout', outcome, `Stopped waiting after ${waitedMs} ms. ${said.message}`, {
    hint: `The effect stays journaled and is never sent twice. ${said.hint}`,
    context: { effectId: outcome.effectId },
  })
}

/** True for an InterlockStepError, also as DBOS gives it back from its records (a plain Error with the same code). */
export function isInterlockStepError(e: unknown): e is Error & { code: string; status: StepStopStatus; effectId: string; hint?: string } {
  const code = e instanceof Error ? (e as { code?: unknown }).code : undefined
  return typeof code === 'string' && code.startsWith(CODE_PREFIX)
}

/**
 * For `shouldRetry` of a DBOS step that calls `submitInStep` with
 * `retriesAllowed`: an outcome is final, and so is a caller's mistake (bad
 * arguments, a step outside a workflow); anything else (a store that did not
 * answer) may be tried again, safely, since the journal answers a repeat.
 */
export function interlockShouldRetry(e: unknown): boolean {
  if (isInterlockStepError(e)) return false
  if (e instanceof InputError) return false
  if (e instanceof InterlockError && (e.exitCode === ExitCode.USAGE || e.exitCode === ExitCode.CONFIG)) return false
  return true
}
