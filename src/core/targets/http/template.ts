/**
 * The http target's templates: `{effect_id}`, `{action}` and `{args.PATH}`,
 * PATH a dotted path into the call's arguments (`{args.to}`,
 * `{args.customer.id}`, `{args.lines.0.sku}`; list indexes as numbers).
 *
 * - In a URL (expandUrl) each value is percent-encoded as one path segment
 *   or query value, and must be a string, number or boolean.
 * - In a JSON body, GraphQL variables or form fields (expandValue), a string
 *   that is exactly one placeholder takes the argument's value as it is (a
 *   number stays a number, a list a list); inside longer text a value is
 *   written as text (strings as they are, anything else as JSON).
 * Braces around anything else are left as they are; templates.ts refuses
 * the ones that look like a misspelt placeholder (`{charge_id}`).
 */
import type { JsonObject, JsonValue } from '../../canonical-json.js'
import { InputError } from '../../errors.js'
import { at, fillText, fillValue, placeholderNames, type PlaceholderSyntax } from '../template-fill.js'

export { at }

const NAME = '(effect_id|action|args(?:\\.[A-Za-z0-9_-]+)+)'
const PLACEHOLDER = new RegExp(`\\{${NAME}\\}`, 'g')
const WHOLE = new RegExp(`^\\{${NAME}\\}$`)
/**
 * Anything that looks like a placeholder: `{word}` or `{word.word}`, no spaces (GraphQL's `{ id }` has them),
 * and not an environment reference (`${API_TOKEN}`, checked before it is filled in).
 */
const LOOKS_LIKE = /(?<!\$)\{([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)\}/g
const SYNTAX: PlaceholderSyntax = { placeholder: PLACEHOLDER, whole: WHOLE }

export interface TemplateVars {
  /** Absent where the effect does not exist yet (premises are read before it is proposed). */
  effect_id?: string
  action?: string
  args?: JsonObject
}

/** Every placeholder a template names (`effect_id`, `args.to`), in strings at any depth. */
export function placeholdersOf(template: unknown): string[] {
  return placeholderNames(template, SYNTAX)
}

/** Brace words that are no placeholder (`{charge_id}`, `{arg.to}`, `{args}`), for load-time checks. */
export function strayPlaceholders(template: unknown): string[] {
  return placeholderNames(template, { placeholder: LOOKS_LIKE, whole: WHOLE }).filter((n) => !WHOLE.test(`{${n}}`))
}

/** The args path a placeholder names (`args.customer.id` → ["customer", "id"]), or null for effect_id and action. */
export function argPathOf(placeholder: string): string[] | null {
  return placeholder.startsWith('args.') ? placeholder.split('.').slice(1) : null
}

/** The value a placeholder stands for; throws an InputError naming what is missing. */
export function lookup(name: string, vars: TemplateVars): JsonValue {
  if (name === 'effect_id') {
    if (vars.effect_id === undefined) throw new InputError('{effect_id} is not known here: premises are read before the effect exists')
    return vars.effect_id
  }
  if (name === 'action') return vars.action ?? ''
  const found = at(vars.args, argPathOf(name)!)
  if (found === undefined) {
    throw new InputError(`the call has no argument ${name}, which the target's request template needs`, {
      hint: `Pass ${name} in the call's args, or change the template in [targets] of interlock.toml.`,
    })
  }
  return found
}

export function expandUrl(template: string, vars: TemplateVars): string {
  return template.replace(PLACEHOLDER, (_, name: string) => encodeURIComponent(scalar(name, lookup(name, vars), 'the URL')))
}

/** A template value with every placeholder filled in (JSON body, GraphQL variables, form fields). */
export function expandValue(template: JsonValue, vars: TemplateVars): JsonValue {
  return fillValue(template, SYNTAX, (name) => lookup(name, vars))
}

/** A template string with every placeholder written as text. */
export function expandText(template: string, vars: TemplateVars): string {
  return fillText(template, SYNTAX, (name) => lookup(name, vars))
}

/** A value that must go out as one text (a URL part, a form field, a header). */
export function scalar(name: string, value: JsonValue, where: string): string {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value)
  throw new InputError(`{${name}} in ${where} must be a string, number or boolean, not ${value === null ? 'null' : Array.isArray(value) ? 'a list' : 'an object'}`, {
    hint: 'Pass a single value for that argument, or send it in a JSON body instead.',
  })
}

