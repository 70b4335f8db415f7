/**
 * The templates of an mcp target's settings (`mark`, `query`, `rests_on`):
 * `{effect_id}` and `{args.<path>}` (a dotted path into the call's
 * arguments, list indexes as numbers: `{args.edits.0.newText}`).
 *
 * A string that is exactly one placeholder takes the value as it is, so
 * `names = "{args.names}"` passes a list on as a list; inside longer text a
 * value is written as text (strings as they are, anything else as JSON).
 * Braces around anything else are left as they are.
 */
import type { JsonObject, JsonValue } from '../../canonical-json.js'
import { InputError } from '../../errors.js'

export interface TemplateInput {
  args: JsonObject
  /** Absent where the effect does not exist yet (premises are read before it is proposed). */
  effectId?: string
}

const PLACEHOLDER = /\{(effect_id|args(?:\.[A-Za-z0-9_-]+)+)\}/g
const WHOLE = /^\{(effect_id|args(?:\.[A-Za-z0-9_-]+)+)\}$/

/** Every placeholder a template value names (`effect_id`, `args.path`), for checking settings. */
export function placeholdersIn(template: unknown): string[] {
  if (typeof template === 'string') return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!)
  if (Array.isArray(template)) return template.flatMap(placeholdersIn)
  if (template !== null && typeof template === 'object') return Object.values(template).flatMap(placeholdersIn)
  return []
}

/** A template value with every placeholder filled in; throws an InputError naming an argument that is missing. */
export function expand(template: unknown, input: TemplateInput): JsonValue {
  if (typeof template === 'string') {
    const whole = WHOLE.exec(template)
    if (whole) return lookup(whole[1]!, input)
    return expandText(template, input)
  }
  if (Array.isArray(template)) return template.map((t) => expand(t, input))
  if (template !== null && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, expand(v, input)]))
  }
  return template as JsonValue
}

/** A template string with every placeholder written as text. */
export function expandText(template: string, input: TemplateInput): string {
  return template.replace(PLACEHOLDER, (_match, name: string) => {
    const v = lookup(name, input)
    return typeof v === 'string' ? v : JSON.stringify(v)
  })
}

function lookup(name: string, input: TemplateInput): JsonValue {
  if (name === 'effect_id') {
    if (input.effectId === undefined) throw new InputError('{effect_id} is not known here: premises are read before the effect exists')
    return input.effectId
  }
  const found = at(input.args, name.split('.').slice(1))
  if (found === undefined) throw new InputError(`{${name}}: the call has no argument ${name}`, { hint: 'Pass that argument, or fix the template in [targets.<name>.tools] of interlock.toml.' })
  return found
}

/** The value at a dotted path into a JSON value, or undefined. */
export function at(value: JsonValue | undefined, path: readonly string[]): JsonValue | undefined {
  let node: JsonValue | undefined = value
  for (const step of path) {
    if (Array.isArray(node)) node = /^\d+$/.test(step) ? node[Number(step)] : undefined
    else if (node !== null && typeof node === 'object') node = Object.prototype.hasOwnProperty.call(node, step) ? node[step] : undefined
    else return undefined
  }
  return node
}
