/**
 * What the contract kit is told about a target under test.
 *
 * Glossary
 * - table: the target's `[targets.<name>]` table exactly as interlock.toml
 *   writes it (snake_case keys, `${VAR}` references), as a plain object. The
 *   kit makes the target from it with the engine's own loader, in this
 *   process and in the crash children alike, so a built-in type, an `http`
 *   target with request templates and a target module (`type = "module"`)
 *   are all just tables.
 * - service: what the target talks to (an emulator, a test container, a
 *   sandbox account): started for each case and stopped after it.
 * - applications: the service's own count of what it made for an effect,
 *   never the journal. Every verdict is judged by it.
 * - case: one named check, `{ name, timeoutMs, run() }`; `run` throws an
 *   AssertionError (node:assert) when the target breaks its contract.
 */
import type { Effect, EffectInput } from '../core/effect.js'

/** `[targets.<name>]` as written in interlock.toml. */
export type TargetTable = Record<string, unknown>
/** Where `${VAR}`s are read from. */
export type Env = Record<string, string | undefined>
/** `[gate]` as written (max_attempts, backoff_ms, max_wait_ms): the gates of the crash cases use it. */
export type GateTable = Record<string, unknown>
/** `[store]` as written: `{ path }` (SQLite) or `{ kind = "postgres", url, schema }`. */
export type StoreTable = Record<string, unknown>

/** Starts what the target talks to, once per case; `stop` is called after the case, passed or failed. */
export interface ServiceFixture<S> {
  start(): Promise<S>
  stop?(service: S): Promise<void> | void
}

export interface TargetUnderTest<S = undefined> {
  /** The target's name: the `<name>` of `[targets.<name>]`, and the `target` of every effect `call` makes. */
  name: string
  /** The table, or a function of the started service (an emulator's URL is known only once it listens). */
  table: TargetTable | ((service: S) => TargetTable)
  /** The table's `${VAR}`s (default: process.env). */
  env?: Env | ((service: S) => Env)
  /** The folder the table's relative paths are read from, as if interlock.toml were there (default: process.cwd()). */
  dir?: string
  /** `[gate]` for the gates of the crash cases (default: interlock.toml's defaults). */
  gate?: GateTable
  /**
   * The journal of the crash cases (default: SQLite in a fresh temporary
   * folder per case). A PostgreSQL store is installed before each case and
   * left in place; its effects are told apart by their threads.
   */
  store?: StoreTable | (() => StoreTable)
  service?: ServiceFixture<S>
  /**
   * The effect to submit, for a thread the kit names: another thread must
   * give another effect. Premises left out are captured with the target's
   * `capture`, when it has one.
   */
  call(thread: string, service: S): EffectInput | Promise<EffectInput>
  /** How many times the service made the effect, by its own record. */
  applications(effect: Effect, service: S): number | Promise<number>
  /**
   * Changes what the effect's premises rest on (the world moving on after
   * the decision); given, the kit checks that the premises then fail.
   */
  changeWorld?(effect: Effect, service: S): void | Promise<void>
  /** The time limit of each case, in ms (default 20000): crash cases start processes. */
  timeoutMs?: number
}

export const DEFAULT_TIMEOUT_MS = 20_000
