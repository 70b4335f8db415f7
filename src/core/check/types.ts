/**
 * `interlock check`: the rows it reports and the modules that make them.
 *
 * Glossary:
 * - family: what `--only` selects (store, targets, keys, policy, notify); config is
 *   always checked, since every other family reads it.
 * - check row: one verdict with a stable `id` CI can match on (e.g.
 *   `targets.orders.tier`), a status, what was seen (`detail`) and, for a
 *   warning or failure, what to do (`fix`).
 * - probe: a read-only look at a target's service (targets/target.ts
 *   ProbeResult); no check changes anything anywhere.
 */
import type { InterlockConfig } from '../config/types.js'

export type CheckStatus = 'pass' | 'warn' | 'fail'

/** What `--only` can select. */
export const CHECK_FAMILIES = ['store', 'targets', 'keys', 'policy', 'notify'] as const
export type CheckFamily = (typeof CHECK_FAMILIES)[number]

export interface CheckRow {
  /** Stable, dotted: `config.schema`, `store.schema`, `targets.<name>.reachable`, `keys.relay`, ... */
  id: string
  family: CheckFamily | 'config'
  /** What is checked, in words. */
  name: string
  status: CheckStatus
  /** What was seen, naming no secret. */
  detail: string
  /** What to do; present on every failure. */
  fix?: string
}

export interface CheckSummary {
  pass: number
  warn: number
  fail: number
}

/** `interlock check --json` prints exactly this (documented in docs/operators.md, "`interlock check`: what it verifies"). */
export interface CheckReport {
  /** False when any row failed; the exit code is then 1, or 3 for a mistake in interlock.toml (exit-code.ts). */
  ok: boolean
  /** The config file checked (absolute), or null when none was found. */
  config: string | null
  /** The families run (config always). */
  families: (CheckFamily | 'config')[]
  summary: CheckSummary
  checks: CheckRow[]
}

/** What the config step hands every family. */
export interface CheckContext {
  config: InterlockConfig
  /** The parsed, env-expanded document, for sections not yet typed. */
  raw: Record<string, unknown>
  /** Config key paths whose `${VAR}` is not set, with the variable's name. */
  unset: ReadonlyMap<string, string>
  /** Per-key problems the loader's cross-key checks found ([[operators]], [policy]). */
  operatorProblems: readonly string[]
  policyProblems: readonly string[]
  /** $INTERLOCK_RELAY_KEY, which `interlock relay` reads when [relay] key is absent. */
  relayKeyEnv?: string
  /** Longest wait for one probe. */
  timeoutMs: number
}

/** One family of checks; `run` never throws for a finding, only returns rows. */
export interface CheckModule {
  family: CheckFamily
  run(ctx: CheckContext): Promise<CheckRow[]>
}
