/**
 * A target made from its table by the engine's own loader: the table is
 * written into an interlock.toml text (with the case's [store] and [gate])
 * and read back by parseConfig, so it is validated, its `${VAR}`s resolved
 * and its secrets marked exactly as the CLI and the relay would, then made by
 * createTarget. The parent and the crash child both make it this way, each
 * in its own process.
 */
import { join, resolve } from 'node:path'
import { stringify } from 'smol-toml'
import { parseConfig } from '../core/config/load.js'
import type { InterlockConfig } from '../core/config/types.js'
import { ConfigError, InputError } from '../core/errors.js'
import { createTarget } from '../core/targets/registry.js'
import type { EffectTarget } from '../core/targets/target.js'
import type { Env, GateTable, StoreTable, TargetTable } from './options.js'

/** What it takes to make the target in any process: plain JSON, written into a crash child's plan. */
export interface Declaration {
  name: string
  table: TargetTable
  /** Absent: process.env. */
  env?: Env
  dir: string
  gate?: GateTable
  store?: StoreTable
}

export function declaredConfig(d: Declaration): InterlockConfig {
  const doc = { ...(d.store ? { store: d.store } : {}), ...(d.gate ? { gate: d.gate } : {}), targets: { [d.name]: d.table } }
  let text: string
  try {
    text = stringify(doc)
  } catch (e) {
    throw new InputError(`the table of target ${d.name} cannot be written as interlock.toml: ${(e as Error).message}`, {
      hint: 'Give the table as TOML would hold it: strings, numbers, booleans, arrays and plain objects.',
      cause: e,
    })
  }
  try {
    return parseConfig(text, { file: join(resolve(d.dir), 'interlock.toml'), shown: `[targets.${d.name}]`, env: d.env ?? process.env })
  } catch (e) {
    // A test runner prints the message, not the problems beside it: each key path goes into the message.
    if (e instanceof ConfigError && e.problems.length > 0) {
      throw new ConfigError(`${e.message}:\n  - ${e.problems.join('\n  - ')}`, [...e.problems], { hint: e.hint, context: e.context, cause: e })
    }
    throw e
  }
}

export function declaredTarget(d: Declaration, config: InterlockConfig = declaredConfig(d)): EffectTarget {
  return createTarget(d.name, config.targets[d.name]!, { secrets: config.secrets })
}
