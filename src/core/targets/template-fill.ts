/**
 * What the http and mcp targets' templates share: walking a template value
 * (a string, or a list or table of them at any depth) to find or fill its
 * placeholders, and reading a dotted path into the call's arguments. Each
 * target keeps its own placeholder syntax and lookup (what a missing
 * argument is called, which names exist).
 *
 * A string that is exactly one placeholder takes the value as it is (a list
 * stays a list); inside longer text a value is written as text (strings as
 * they are, anything else as JSON).
 */
import type { JsonValue } from '../canonical-json.js'

export interface PlaceholderSyntax {
  /** Every placeholder in a text (global); group 1 is its name. */
  placeholder: RegExp
  /** A text that is one placeholder and nothing else; group 1 is its name. */
  whole: RegExp
}

/** Every placeholder name a template value holds, in strings at any depth. */
export function placeholderNames(template: unknown, syntax: PlaceholderSyntax): string[] {
  if (typeof template === 'string') return [...template.matchAll(syntax.placeholder)].map((m) => m[1]!)
  if (Array.isArray(template)) return template.flatMap((t) => placeholderNames(t, syntax))
  if (template !== null && typeof template === 'object') return Object.values(template).flatMap((t) => placeholderNames(t, syntax))
  return []
}

/** A template value with every placeholder filled in by `lookup`. */
export function fillValue(template: unknown, syntax: PlaceholderSyntax, lookup: (name: string) => JsonValue): JsonValue {
  if (typeof template === 'string') {
    const whole = syntax.whole.exec(template)
    if (whole) return lookup(whole[1]!)
    return fillText(template, syntax, lookup)
  }
  if (Array.isArray(template)) return template.map((t) => fillValue(t, syntax, lookup))
  if (template !== null && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fillValue(v, syntax, lookup)]))
  }
  return template as JsonValue
}

/** A template string with every placeholder written as text. */
export function fillText(template: string, syntax: PlaceholderSyntax, lookup: (name: string) => JsonValue): string {
  return template.replace(syntax.placeholder, (_match, name: string) => {
    const v = lookup(name)
    return typeof v === 'string' ? v : JSON.stringify(v)
  })
}

/** The value at a dotted path into a JSON value (list indexes as numbers), or undefined. */
export function at(value: JsonValue | undefined, path: readonly string[]): JsonValue | undefined {
  let node: JsonValue | undefined = value
  for (const step of path) {
    if (Array.isArray(node)) node = /^\d+$/.test(step) ? node[Number(step)] : undefined
    else if (node !== null && typeof node === 'object') node = Object.prototype.hasOwnProperty.call(node, step) ? node[step] : undefined
    else return undefined
  }
  return node
}
