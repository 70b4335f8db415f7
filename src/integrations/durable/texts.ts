/**
 * What a durable engine's step says when an effect does not end COMMITTED:
 * the effect by id and what it was, what happened, and the command that
 * moves it on. Engines carry these texts in their own errors (a Restate
 * TerminalError, a Temporal ApplicationFailure), so an operator reading the
 * engine's UI knows what to run.
 */
import type { EffectInput } from '../../core/effect.js'
import type { SubmitOutcome } from '../../core/outcome.js'

export type NotCommitted = Exclude<SubmitOutcome, { status: 'committed' }>

/** The operator's command for an outcome that waits for one; undefined for the others. */
export function operatorCommand(outcome: SubmitOutcome): string | undefined {
  if (outcome.status === 'ambiguous') return `interlock outbox resolve ${outcome.effectId} --applied (or --not-applied)`
  if (outcome.status === 'held') return `interlock outbox release ${outcome.effectId}`
  return undefined
}

export function outcomeText(outcome: NotCommitted, effect: Pick<EffectInput, 'target' | 'action'>): string {
  const what = `effect ${outcome.effectId} (${effect.action} on ${effect.target})`
  switch (outcome.status) {
    case 'ambiguous':
      return (
        `AMBIGUOUS: ${what} was sent, and nobody can know whether it took effect: ${outcome.reason}. ` +
        `It is not sent again on a retry. An operator checks the target and resolves it: ${operatorCommand(outcome)}`
      )
    case 'rejected':
      return `REJECTED, nothing was sent: ${what} rests on premises that no longer hold: ${outcome.violations.join('; ')}`
    case 'failed':
      return `FAILED: the target refused ${what}: ${outcome.reason}`
    case 'held':
      return `HELD for operators under rule "${outcome.rule}"${outcome.reason ? ` (${outcome.reason})` : ''}: ${what} waits for a release, nothing was sent: ${operatorCommand(outcome)}`
    case 'in_flight':
      return (
        `In flight: ${what} is journaled and ${outcome.state}${outcome.reason ? `: ${outcome.reason}` : ''}. ` +
        `It is finished by the next try${outcome.notBefore ? `, not before ${outcome.notBefore}` : ''}, never sent twice`
      )
  }
}
