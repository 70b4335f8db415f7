/**
 * Canonical JSON, after RFC 8785 (JSON Canonicalization Scheme):
 *
 * - object keys sorted by UTF-16 code units (RFC 8785 §3.2.3);
 * - numbers in ECMAScript's shortest round-trip form (`1.0`, `1e0` and `1` are
 *   one number), `-0` written as `0`; NaN and ±Infinity are refused;
 * - no whitespace; strings escaped as `JSON.stringify` does (RFC 8785 §3.2.2.2),
 *   which writes a lone surrogate as a `\uXXXX` escape, so every string,
 *   well-formed Unicode or not, survives the text and a parse unchanged;
 * - `undefined` object members are dropped (as JSON.stringify does); `undefined`,
 *   functions, symbols and bigints anywhere else are refused.
 *
 * Strings are written exactly as given, code unit for code unit: this is the
 * text that is journaled, hashed into the chain, signed and sent, so an
 * agent's `Cafe\u0301` reaches the target as `Cafe\u0301`, never as `Café`.
 *
 * `identityJson` is the one exception, for identity only: the effect id
 * (effect.ts) hashes it, with every string and key in Unicode Normalization
 * Form C first, so the same decision typed as composed or decomposed
 * characters is one effect; keys that become equal under NFC are refused.
 *
 * The effect id and the journal's hash chain are built on these, so changing
 * either changes every id or every hash: don't.
 */
import { InputError } from './errors.js'

export type JsonPrimitive = string | number | boolean | null
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue }
export type JsonObject = { [key: string]: JsonValue }

/** The exact canonical text: strings as given. */
export function canonicalJson(value: unknown): string {
  // Every record's data, every effect and every receipt passes here, several times per effect: the common
  // case (plain JSON) is written without the paths only an error needs; anything else goes the careful way,
  // which writes the same text or refuses naming where.
  try {
    return fast(value)
  } catch (e) {
    if (e !== NOT_PLAIN) throw e
    return write(value, '$', exact)
  }
}

const NOT_PLAIN = Symbol('not plain JSON')

/** canonicalJson's text of plain JSON (exact form: keys as given are distinct); NOT_PLAIN for anything else. */
function fast(value: unknown): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) throw NOT_PLAIN
      return Object.is(value, -0) ? '0' : JSON.stringify(value)
    case 'object': {
      if (Array.isArray(value)) {
        let out = '['
        for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + fast(value[i])
        return `${out}]`
      }
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN
      const object = value as Record<string, unknown>
      // The default sort compares UTF-16 code units, as RFC 8785 §3.2.3 orders keys.
      const keys = Object.keys(object).sort()
      let out = '{'
      for (const k of keys) {
        const v = object[k]
        if (v === undefined) continue
        out += `${out.length === 1 ? '' : ','}${JSON.stringify(k)}:${fast(v)}`
      }
      return `${out}}`
    }
    default:
      throw NOT_PLAIN
  }
}

/** The canonical text of an identity: every string and key in NFC, keys that collide under NFC refused. */
export function identityJson(value: unknown): string {
  // Text of ASCII alone (a lone surrogate is written as an ASCII escape) is its own NFC, and keys NFC leaves
  // alone cannot collide: the exact text is the identity text, without normalising every string (every
  // effect's id is made here).
  let text: string | undefined
  try {
    text = fast(value)
  } catch (e) {
    if (e !== NOT_PLAIN) throw e
  }
  return text !== undefined && ASCII.test(text) ? text : write(value, '$', nfc)
}

const ASCII = /^[\x00-\x7f]*$/

type Form = (s: string) => string
const exact: Form = (s) => s
const nfc: Form = (s) => s.normalize('NFC')

function write(value: unknown, path: string, form: Form): string {
  if (value === null) return 'null'
  switch (typeof value) {
    case 'string':
      return JSON.stringify(form(value))
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (!Number.isFinite(value)) throw new InputError(`${path}: ${value} is not a JSON number`)
      return Object.is(value, -0) ? '0' : JSON.stringify(value)
    case 'object': {
      if (Array.isArray(value)) return `[${value.map((v, i) => write(v, `${path}[${i}]`, form)).join(',')}]`
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) {
        throw new InputError(`${path}: a ${proto?.constructor?.name ?? 'non-plain'} object is not JSON; pass plain objects, arrays, strings, numbers, booleans or null`)
      }
      const entries: [string, unknown][] = []
      const seen = new Set<string>()
      for (const [k, v] of Object.entries(value)) {
        if (v === undefined) continue
        const key = form(k)
        if (seen.has(key)) throw new InputError(`${path}: keys ${JSON.stringify(k)} collide after Unicode normalization`)
        seen.add(key)
        entries.push([key, v])
      }
      entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${write(v, `${path}.${k}`, form)}`).join(',')}}`
    }
    default:
      throw new InputError(`${path}: a ${typeof value} is not JSON`)
  }
}

/** Parse JSON text that is known to have come from `canonicalJson` (or any JSON). */
export function parseJson(text: string): JsonValue {
  return JSON.parse(text) as JsonValue
}
