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
import { at, fillText, fillValue, placeholderNames } from '../template-fill.js'

export { at }

export interface TemplateInput {
  args: JsonObject
  /** Absent where the effect does not exist yet (premises are read before it is proposed). */
  effectId?: string
}

const PLACEHOLDER = /\{(effect_id|args(?:\.[A-Za-z0-9_-]+)+)\}/g
const WHOLE = /^\{(effect_id|args(?:\.[A-Za-z0-9_-]+)+)\}$/
const SYNTAX = { placeholder: PLACEHOLDER, whole: WHOLE }

/** Every placeholder a template value names (`effect_id`, `args.path`), for checking settings. */
export function placeholdersIn(template: unknown): string[] {
  return placeholderNames(template, SYNTAX)
}

/** A template value with every placeholder filled in; throws an InputError naming an argument that is missing. */
export function expand(template: unknown, input: TemplateInput): JsonValue {
  return fillValue(template, SYNTAX, (name) => lookup(name, input))
}

/** A template string with every placeholder written as text. */
export function expandText(template: string, input: TemplateInput): string {
  return fillText(template, SYNTAX, (name) => lookup(name, input))
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

