/**
 * What `interlock outbox submit` reads: one effect as a JSON object (from a
 * file or stdin), flags laid over it. Checked here, at the edge, so that a
 * typo is a usage error naming the field rather than an effect journaled with
 * something the operator did not mean.
 */
import type { EffectInput, JsonObject } from '../effect.js'
import { UsageError } from '../errors.js'

const FIELDS = ['thread', 'target', 'action', 'args', 'premises', 'key'] as const

/** Default thread of an effect submitted from the terminal: its journal, and part of its id. */
export const CLI_THREAD = 'interlock-cli'

export interface SubmitFlags {
  thread?: string
  target?: string
  action?: string
  /** JSON object text. */
  args?: string
  /** `name=value` pairs, each a string argument, laid over `args`. */
  arg?: string[]
  /** JSON object text. */
  premises?: string
  key?: string
}

/** The effect from `text` (a JSON object; undefined when none was given) with the flags laid over it. */
export function submitInput(text: string | undefined, flags: SubmitFlags, source: string): EffectInput {
  const base = text === undefined ? {} : parseObject(text, source)
  for (const k of Object.keys(base)) {
    if (!(FIELDS as readonly string[]).includes(k)) {
      throw new UsageError(`${source}: unknown field ${JSON.stringify(k)}`, { hint: `An effect has ${FIELDS.join(', ')}.` })
    }
  }
  const args: JsonObject = { ...(asObject(base.args, `${source}: args`) ?? {}), ...(flags.args === undefined ? {} : parseObject(flags.args, '--args')) }
  for (const pair of flags.arg ?? []) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new UsageError(`--arg ${JSON.stringify(pair)} is not name=value`, { hint: 'Write --arg amount=12.00 (a string); use --args \'{"amount":12}\' for other JSON types.' })
    args[pair.slice(0, eq)] = pair.slice(eq + 1)
  }
  const premises = flags.premises === undefined ? asObject(base.premises, `${source}: premises`) : parseObject(flags.premises, '--premises')
  const input: EffectInput = {
    thread: flags.thread ?? stringField(base.thread, `${source}: thread`) ?? CLI_THREAD,
    target: required(flags.target ?? stringField(base.target, `${source}: target`), 'target'),
    action: required(flags.action ?? stringField(base.action, `${source}: action`), 'action'),
    args,
  }
  if (premises !== undefined) input.premises = premises
  const key = flags.key ?? stringField(base.key, `${source}: key`)
  if (key !== undefined) input.key = key
  return input
}

function parseObject(text: string, where: string): JsonObject {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    throw new UsageError(`${where} is not JSON: ${(e as Error).message}`, { hint: 'Give one JSON object, e.g. {"target":"refunds","action":"refund","args":{"amount":"12.00"}}.' })
  }
  const object = asObject(value, where)
  if (object === undefined) throw new UsageError(`${where} must be a JSON object`, { hint: 'Give one JSON object, not an array or a scalar.' })
  return object
}

function asObject(value: unknown, where: string): JsonObject | undefined {
  if (value === undefined) return undefined
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${where} must be a JSON object`)
  return value as JsonObject
}

function stringField(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw new UsageError(`${where} must be a string`)
  return value
}

function required(value: string | undefined, field: 'target' | 'action'): string {
  if (value === undefined) throw new UsageError(`no ${field}: give --${field}, or "${field}" in the JSON`, { hint: 'An effect names its target (a [targets.<name>] of interlock.toml) and its action.' })
  return value
}
