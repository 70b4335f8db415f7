/**
 * `agent-interlock/temporal`: effects from inside Temporal activities, sent
 * once across Temporal's retries (activity.ts), and the failures a workflow
 * catches when they are not (failures.ts). Loads `@temporalio/activity` and
 * `@temporalio/common`, optional peer dependencies; `agent-interlock` itself
 * never does.
 */
export { interlockSubmit, activitySleep, type InterlockSubmitOptions } from './activity.js'
export { FAILURE_TYPES, type FailureDetail } from './failures.js'
export type { StepEffect, Committed, Held, RunMode } from '../durable/index.js'
