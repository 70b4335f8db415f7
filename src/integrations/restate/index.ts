/**
 * `agent-interlock/restate`: effects from inside Restate handlers, sent once
 * across Restate's retries (run.ts). Loads `@restatedev/restate-sdk`, an
 * optional peer dependency; `agent-interlock` itself never does.
 */
export { interlockRun, METADATA_EFFECT_ID, METADATA_STATUS, ERROR_CODES, type InterlockRunOptions } from './run.js'
export type { StepEffect, Committed, RunMode } from '../durable/index.js'
