/**
 * `agent-interlock/dbos`: effects as DBOS steps (@dbos-inc/dbos-sdk, an
 * optional peer dependency, loaded only through this entry point). DBOS
 * re-runs a step whose result it had not checkpointed when the process died;
 * Interlock's journal makes that re-run find the effect it already made
 * instead of making it again, or say AMBIGUOUS when nobody can know.
 * docs/engines.md, "DBOS", and docs/dbos.md.
 */
export { interlockStep, submitInStep, INTERLOCK_EVENT, type StepEffect, type StepOutcome, type CommittedOutcome, type InterlockStepOptions, type SubmitInStepOptions } from './step.js'
export { InterlockStepError, isInterlockStepError, interlockShouldRetry, type StepStopStatus } from './errors.js'
export { dbosThread, stepKey, workflowIdOf, wakeTopic, THREAD_PREFIX } from './identity.js'
export type { RunMode } from './source.js'
