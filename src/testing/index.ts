/**
 * `agent-interlock/testing`: the contract kit for your own target. Given a
 * target's [targets.<name>] table and the service it talks to, it runs the
 * tier contract and the crash points the project proves its own targets
 * with, judged by the service's own record. Cases are plain
 * `{ name, timeoutMs, run() }`; registerContract hands them to vitest or
 * node:test (docs/targets.md, "Testing your own target").
 */
export { tierContract } from './tier-contract.js'
export { crashPoints, expectedAfter, KIT_CRASH_POINTS, type CrashPointsOptions, type KitCrashPoint } from './crash-points.js'
export { registerContract, type ContractCase, type Runner } from './case.js'
export type { TargetUnderTest, ServiceFixture, TargetTable, Env, GateTable, StoreTable } from './options.js'
export type { Effect, EffectInput, Tier } from '../core/effect.js'
