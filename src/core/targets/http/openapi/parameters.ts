/**
 * An operation's parameters as an http target's templates:
 *
 * - path: `{owner}` in the path becomes `{args.owner}` in the URL (each
 *   value percent-encoded as one segment);
 * - query: `params = { state = "{args.state}" }`;
 * - header: a header named like an idempotency key (Idempotency-Key,
 *   I-Twilio-Idempotency-Token, X-Idempotency-Key) carries the effect id
 *   (`effect_id_header`: tier 1). Other headers are not templated by the
 *   http target, so a header parameter gets the one value the document
 *   allows (const, a single enum value, its default) or a `${VAR}`;
 * - cookie: not sent by the http target; said.
 *
 * Optional ones are sent only when asked for (optional.ts).
 */
import type { Json, JsonTable } from './document.js'
import { headerVariable, type ArgNames } from './names.js'
import type { NotSent, OptionalChoice } from './optional.js'
import { derefTable, isTable, typeOf } from './refs.js'

/** The effect id is 64 hex characters; a key the service caps shorter would be refused. */
export const EFFECT_ID_LENGTH = 64
const IDEMPOTENCY = /idempoten/i
/** OpenAPI 3: header parameters by these names "SHALL be ignored" (Parameter Object, `in`). */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization'])

export interface MappedParameters {
  /** The path with `{args.NAME}` placeholders. */
  path: string
  params: Record<string, string>
  headers: Record<string, string>
  effectIdHeader?: string
  /** Why the effect id header was or was not used, for the tier comment. */
  idempotency?: string
  notes: string[]
}

interface Parameter {
  name: string
  in: string
  required: boolean
  schema: JsonTable
  deprecated: boolean
  /** GitHub's x-multi-segment: a value such as a file path, slashes included. */
  multiSegment: boolean
}

export function mapParameters(root: JsonTable, pathItem: JsonTable, operation: JsonTable, path: string, args: ArgNames, optional: OptionalChoice, notSent: NotSent, prefix: string): MappedParameters {
  // A literal ${ in the path would be read as an environment variable when interlock.toml loads.
  const out: MappedParameters = { path: path.replace(/\$\{/g, () => '$${'), params: {}, headers: {}, notes: [] }
  const list = parametersOf(root, pathItem, operation, out.notes)
  // Path parameters are always required (OpenAPI 3), in the order the path names them.
  const pathNames = [...new Set([...path.matchAll(/(?<!\$)\{([^{}]+)\}/g)].map((m) => m[1]!))]
  for (const name of pathNames) {
    const p = list.find((q) => q.in === 'path' && q.name === name)
    if (!p) out.notes.push(`The path names {${name}}, which the operation does not declare as a parameter: taken as an argument anyway.`)
    const arg = args.take(name, 'path parameter')
    out.path = out.path.replace(new RegExp(`(?<!\\$)\\{${escapeRegExp(name)}\\}`, 'g'), () => `{args.${arg}}`)
    if (p?.multiSegment) {
      out.notes.push(`Path parameter ${name} may span several segments (a/b), but each value is sent percent-encoded as one (a%2Fb): check that the service accepts that.`)
    }
  }
  for (const p of list) {
    if (p.in === 'path') continue
    if (p.in === 'cookie') {
      out.notes.push(`Left out: cookie parameter ${p.name}${p.required ? ' (required)' : ''}: the http target sends no cookies.`)
      continue
    }
    if (p.in === 'header') {
      header(root, p, out, optional, notSent, prefix)
      continue
    }
    if (p.in !== 'query') {
      out.notes.push(`Left out: parameter ${p.name} in ${JSON.stringify(p.in)}, which OpenAPI does not define.`)
      continue
    }
    if (!p.required && !optional.wants(p.name)) {
      notSent.add('query parameters', p.name)
      continue
    }
    const type = typeOf(root, p.schema)
    if (type === 'object') {
      out.notes.push(`Left out: query parameter ${p.name} is an object (style ${JSON.stringify(p.schema.style ?? 'form')}), which params cannot send${p.required ? '; the service requires it' : ''}.`)
      continue
    }
    const arg = args.take(p.name, 'query parameter')
    out.params[p.name] = `{args.${arg}}`
    if (type === 'array') out.notes.push(`Query parameter ${p.name} takes a list; params sends one value: pass it as the one text the service reads (e.g. comma-separated).`)
    if (p.deprecated) out.notes.push(`Query parameter ${p.name} is deprecated in the document.`)
  }
  return out
}

function header(root: JsonTable, p: Parameter, out: MappedParameters, optional: OptionalChoice, notSent: NotSent, prefix: string): void {
  const lower = p.name.toLowerCase()
  if (IGNORED_HEADERS.has(lower)) {
    out.notes.push(`Header parameter ${p.name} is ignored, as OpenAPI says of Accept, Content-Type and Authorization parameters${lower === 'authorization' ? '; credentials come from the security scheme' : ''}.`)
    return
  }
  if (IDEMPOTENCY.test(p.name)) {
    const max = derefTable(root, p.schema)?.maxLength
    if (typeof max === 'number' && max < EFFECT_ID_LENGTH) {
      out.idempotency = `the document declares the header ${p.name} but caps it at ${max} characters; the effect id has ${EFFECT_ID_LENGTH}, so it is not sent there.`
      out.notes.push(`Left out: header ${p.name} (at most ${max} characters, shorter than the effect id).`)
      return
    }
    if (out.effectIdHeader === undefined) {
      out.effectIdHeader = p.name
      out.idempotency = `the document declares the header ${p.name} on this operation: the effect id is sent in it, so a retry after a lost answer is the same request to the service.`
      return
    }
  }
  if (!p.required && !optional.wants(p.name)) {
    notSent.add('header parameters', p.name)
    return
  }
  const fixed = fixedValue(root, p.schema)
  if (fixed !== undefined) {
    out.headers[p.name] = fixed.replace(/\$\{/g, () => '$${')
    return
  }
  const variable = headerVariable(prefix, p.name)
  out.headers[p.name] = `\${${variable}}`
  out.notes.push(`Header ${p.name} is read from the environment variable ${variable}: the http target does not fill headers from a call's arguments, so it is the same on every call.`)
}

/** The one value a schema allows, or its default, as text. */
function fixedValue(root: JsonTable, schema: JsonTable): string | undefined {
  const s = derefTable(root, schema) ?? {}
  const one: Json | undefined = s.const !== undefined ? s.const : Array.isArray(s.enum) && s.enum.length === 1 ? s.enum[0] : s.default
  return typeof one === 'string' || typeof one === 'number' || typeof one === 'boolean' ? String(one) : undefined
}

/** The path item's parameters, the operation's over them (same name and place), each dereferenced. */
function parametersOf(root: JsonTable, pathItem: JsonTable, operation: JsonTable, notes: string[]): Parameter[] {
  const byKey = new Map<string, Parameter>()
  for (const list of [pathItem.parameters, operation.parameters]) {
    for (const raw of Array.isArray(list) ? list : []) {
      const p = derefTable(root, raw, notes)
      if (!p || typeof p.name !== 'string' || typeof p.in !== 'string') continue
      const schema = isTable(p.schema) ? p.schema : {}
      const multiSegment = p['x-multi-segment'] === true || schema['x-multi-segment'] === true
      byKey.set(`${p.in}\0${p.name}`, { name: p.name, in: p.in, required: p.required === true || p.in === 'path', schema, deprecated: p.deprecated === true, multiSegment })
    }
  }
  return [...byKey.values()]
}

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
