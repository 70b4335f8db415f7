/**
 * What the durable-engine helpers (integrations/restate, integrations/temporal)
 * share: the effect a step submits, how an engine's ids become its thread and
 * key, one look at the effect (submit, or carry on one journaled before), and
 * the texts of the outcomes that are not COMMITTED.
 */
import type { EffectInput } from '../../core/effect.js'
import type { SubmitOutcome } from '../../core/outcome.js'

export { look, DEFAULT_WAIT_MS, type RunMode, type LookOptions } from './carry.js'
export { keyName, Ordinals } from './names.js'
export { threadName } from '../thread-name.js'
export { outcomeText, operatorCommand, refusalText, type NotCommitted } from './texts.js'
export { isRefusal } from './refusal.js'

/** An effect as a step submits it: the engine gives it its thread and key. */
export type StepEffect = Omit<EffectInput, 'thread' | 'key'>

export type Committed = Extract<SubmitOutcome, { status: 'committed' }>
export type Held = Extract<SubmitOutcome, { status: 'held' }>
