/**
 * What an outcome that is not COMMITTED becomes for Temporal: an
 * `ApplicationFailure` whose `type` a workflow can catch (it arrives as the
 * `cause` of the `ActivityFailure` the workflow sees) and whose first detail
 * names the effect.
 *
 * - AMBIGUOUS, REJECTED, FAILED, and an effect refused for what it is (bad
 *   args, unknown target): non-retryable. Retrying an AMBIGUOUS effect is the
 *   very duplicate the engine cannot see; an operator workflow catches
 *   `InterlockAmbiguous` and waits for `interlock outbox resolve`.
 * - in flight (a service asked to wait, or the tries ran out): retryable, so
 *   Temporal's next attempt looks again and carries it on by its tier; a
 *   service's wait becomes `nextRetryDelay`.
 * (https://docs.temporal.io/develop/typescript/failure-detection,
 * https://docs.temporal.io/design-patterns/non-retryable-errors)
 */
import { ApplicationFailure } from '@temporalio/common'
import type { EffectInput } from '../../core/effect.js'
import { operatorCommand, outcomeText, refusalText, type NotCommitted } from '../durable/index.js'

export const FAILURE_TYPES = {
  ambiguous: 'InterlockAmbiguous',
  rejected: 'InterlockRejected',
  failed: 'InterlockFailed',
  refused: 'InterlockRefused',
  inFlight: 'InterlockInFlight',
} as const

/** The failure's first detail. */
export interface FailureDetail {
  effectId: string
  status: string
  thread: string
  key: string
  target: string
  action: string
  /** The operator's command, for AMBIGUOUS. */
  command?: string
  reason?: string
  violations?: string[]
}

/** An outcome a step ends with a failure on: every one but COMMITTED and HELD (which waits, or is returned). */
export type Failing = Exclude<NotCommitted, { status: 'held' }>

export function failureOf(outcome: Failing, input: EffectInput, now: () => number = Date.now): ApplicationFailure {
  const detail: FailureDetail = { effectId: outcome.effectId, status: outcome.status, thread: input.thread, key: input.key!, target: input.target, action: input.action }
  const command = operatorCommand(outcome)
  if (command) detail.command = command
  if ('reason' in outcome && outcome.reason) detail.reason = outcome.reason
  if (outcome.status === 'rejected') detail.violations = outcome.violations
  const message = outcomeText(outcome, input)
  switch (outcome.status) {
    case 'ambiguous':
    case 'rejected':
    case 'failed':
      return ApplicationFailure.create({ type: FAILURE_TYPES[outcome.status], message, nonRetryable: true, details: [detail] })
    case 'in_flight': {
      const delay = outcome.notBefore ? Math.max(0, Date.parse(outcome.notBefore) - now()) : undefined
      return ApplicationFailure.create({ type: FAILURE_TYPES.inFlight, message, nonRetryable: false, details: [detail], ...(delay !== undefined ? { nextRetryDelay: delay } : {}) })
    }
  }
}

export function refusalOf(e: Error, input: Pick<EffectInput, 'target' | 'action'>): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE_TYPES.refused,
    message: refusalText(e),
    nonRetryable: true,
    details: [{ target: input.target, action: input.action }],
  })
}
