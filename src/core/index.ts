/**
 * Interlock as a library: `new Gate({ store, targets })`, `gate.submit(effect)`,
 * `gate.recover()`. Everything a user needs is exported here; the CLI is built
 * on the same surface.
 */
export { Gate, DEFAULT_RETRY, type GateOptions } from './gate.js'
export type { SubmitOutcome, OutcomeStatus } from './outcome.js'
export type { RecoveryReport, RecoveredEffect, RecoveryAction } from './recovery.js'
export { effectId, toEffect, type Effect, type EffectInput, type EffectSnapshot, type Premises, type Receipt, type Tier } from './effect.js'
export { canonicalJson, type JsonValue, type JsonObject } from './canonical-json.js'
export { STATES, TRANSITIONS, TERMINAL_STATES, canTransition, assertTransition, type State } from './lifecycle.js'
export { allowAll, type Policy, type Hold } from './policy.js'
export { systemClock, type Clock } from './clock.js'
export { CRASH_POINTS, CRASH_ENV, type CrashPoint } from './crash-points.js'
export * from './errors.js'
export { assertTarget, type EffectTarget, type ApplyContext } from './targets/target.js'
export { createTarget, createTargets } from './targets/registry.js'
export { HttpTarget } from './targets/http/index.js'
export { RepoTarget, captureRepoPremises, validateRepoPremises, type PremiseSpec, type RepoPremises } from './targets/repo/index.js'
export { PostgresRowTarget, type PostgresRowTargetSettings, type PostgresRowTargetOptions } from './targets/postgres-row/index.js'
export { StripeRefundTarget, toMinorUnits, fromMinorUnits, type StripeTargetSettings } from './targets/stripe/index.js'
export { SendgridMailTarget, type SendgridTargetSettings } from './targets/sendgrid/index.js'
export { SlackMessageTarget, type SlackTargetSettings } from './targets/slack/index.js'
export { GithubTarget, type GithubTargetSettings, type GithubTargetOptions, type MergeMethod } from './targets/github/index.js'
export { S3Target, type S3TargetSettings, type S3TargetOptions } from './targets/s3/index.js'
export type { Store, JournalRecord, AppendRequest, AppendResult } from './stores/store.js'
export { openStore } from './stores/open.js'
export * from './config/index.js'
export * from './crypto/index.js'
