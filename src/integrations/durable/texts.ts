/**
 * What a durable engine's step says when an effect does not end COMMITTED,
 * in the words every integration uses (agent/words.ts): the effect by id,
 * whether anything was sent, and who acts next. Engines carry the text in
 * their own errors (a Restate TerminalError, a Temporal ApplicationFailure),
 * and the operator's command beside it, so whoever reads the engine's UI
 * knows what to run.
 */
import type { EffectInput } from '../../core/effect.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import { notDoneWords, refusedWords } from '../agent/words.js'

export type NotCommitted = Exclude<SubmitOutcome, { status: 'committed' }>

// Outcomes come from the journal, which the gate's secrets guard has scrubbed already.
const asJournaled = (text: string) => text

/** The operator's command for an outcome that waits for one; undefined for the others. */
export function operatorCommand(outcome: SubmitOutcome): string | undefined {
  if (outcome.status === 'ambiguous') return `interlock outbox resolve ${outcome.effectId} --applied (or --not-applied)`
  if (outcome.status === 'held') return `interlock outbox release ${outcome.effectId}`
  return undefined
}

export function outcomeText(outcome: NotCommitted, effect: Pick<EffectInput, 'target' | 'action'>): string {
  return notDoneWords(outcome, { tool: effect.action, target: effect.target, scrub: asJournaled }).text
}

/** An effect refused for what it is (durable/refusal.ts): nothing was sent or journaled. */
export function refusalText(e: unknown): string {
  return refusedWords(e instanceof Error ? e.message : String(e), { scrub: asJournaled }).text
}
