/**
 * An operation's request body as an http target's body template:
 *
 * - application/json (or another JSON type, e.g. application/merge-patch+json,
 *   then also sent as the Content-Type): one placeholder per top-level
 *   property, `$ref`s and `allOf` resolved (refs.ts); a property with one
 *   allowed value (const, a single enum value) is written as that value;
 * - a JSON body that is not an object with listed properties (a `oneOf` of
 *   shapes, a list, any object) is sent whole from one argument: the template
 *   '"{args.body}"' takes the argument as it is (template.ts);
 * - application/x-www-form-urlencoded: one form field per property;
 * - no body: an empty JSON object, since the http target sends a body with
 *   every write (with none declared it would send Interlock's envelope);
 * - anything else (multipart/form-data, octet-stream, text) cannot be sent
 *   by the http target: the operation is refused, naming the media type.
 */
import type { JsonValue } from '../../../canonical-json.js'
import { InputError } from '../../../errors.js'
import type { Json, JsonTable } from './document.js'
import type { ArgNames } from './names.js'
import type { NotSent, OptionalChoice } from './optional.js'
import { derefTable, isTable, objectShape, typeOf } from './refs.js'

export type MappedBody =
  | { kind: 'json'; template: Record<string, JsonValue> }
  /** The whole body from one argument. */
  | { kind: 'whole'; arg: string }
  | { kind: 'form'; fields: Record<string, string> }

export interface BodyMapping {
  body: MappedBody
  /** A Content-Type header to send, when the service's is not plain application/json or form. */
  contentType?: string
  notes: string[]
}

const JSON_TYPE = /^application\/json\s*(;|$)/i
const JSON_LIKE = /^application\/[^;\s]+\+json\s*(;|$)/i
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i

export function mapRequestBody(root: JsonTable, operation: JsonTable, opName: string, args: ArgNames, optional: OptionalChoice, notSent: NotSent): BodyMapping {
  const notes: string[] = []
  const rb = derefTable(root, operation.requestBody, notes)
  const content = rb && isTable(rb.content) ? rb.content : {}
  const types = Object.keys(content)
  if (types.length === 0) {
    notes.push('The operation takes no request body; an empty JSON object {} is sent (the http target sends a body with every write).')
    return { body: { kind: 'json', template: {} }, notes }
  }
  const json = types.find((t) => JSON_TYPE.test(t)) ?? types.find((t) => JSON_LIKE.test(t))
  const form = types.find((t) => FORM_TYPE.test(t))
  const chosen = json ?? form
  if (!chosen) {
    throw new InputError(`operation ${opName} sends its body as ${types.join(' or ')}, which an http target cannot send (it sends JSON or form fields)`, {
      hint: 'Pick another operation, or write a target module for this one (docs/targets.md, "A target of your own").',
      context: { operation: opName, mediaTypes: types },
    })
  }
  const others = types.filter((t) => t !== chosen)
  if (others.length > 0) notes.push(`Left out: the body's other media type${others.length > 1 ? 's' : ''} ${others.join(', ')}; it is sent as ${chosen}.`)
  const media = isTable(content[chosen]) ? content[chosen] : {}
  const shape = objectShape(root, media.schema)
  notes.push(...shape.problems.map((p) => `The body's schema: ${p}.`))
  const contentType = chosen === json && !JSON_TYPE.test(chosen) ? chosen : undefined

  if (chosen === form) {
    const fields: Record<string, string> = {}
    if (shape.kind !== 'object') notes.push('Left out: the form body\'s schema lists no properties; no field is sent. Write the form table by hand.')
    for (const [name, schema] of shape.properties) {
      if (skipped(name, schema, shape.required.has(name), notes)) continue
      if (!shape.required.has(name) && !optional.wants(name)) {
        notSent.add('form fields', name)
        continue
      }
      if (typeOf(root, schema) === 'object') {
        notes.push(`Left out: form field ${name} is an object, which form fields cannot carry (the http target sends flat fields)${shape.required.has(name) ? '; the service requires it' : ''}.`)
        continue
      }
      fields[name] = `{args.${args.take(name, 'form field')}}`
    }
    if (shape.open) notes.push('The form\'s schema allows fields beyond those listed: only the listed ones are sent.')
    return { body: { kind: 'form', fields }, notes }
  }

  if (shape.kind !== 'object' || (shape.properties.length === 0 && shape.open)) {
    const arg = args.take(args.has('body') ? 'request_body' : 'body', 'body')
    const what =
      shape.kind === 'choice'
        ? `one of ${shape.choice!.count} shapes (${shape.choice!.keyword})`
        : shape.kind === 'object'
          ? 'an object with no listed properties'
          : media.schema === undefined
            ? 'not described (no schema)'
            : `${typeOf(root, media.schema) ?? 'not an object'}`
    notes.push(`The body is ${what}: not mapped property by property; the argument ${arg} is sent whole as the body, as the agent passes it.`)
    return { body: { kind: 'whole', arg }, ...(contentType ? { contentType } : {}), notes }
  }
  const template: Record<string, JsonValue> = {}
  for (const [name, schema] of shape.properties) {
    const required = shape.required.has(name)
    if (skipped(name, schema, required, notes)) continue
    if (/idempoten/i.test(name)) {
      notes.push(`The body property ${name} looks like an idempotency key: if the service deduplicates on it, write "{effect_id}" there and set tier = 1 (mind its length limit: the effect id has 64 characters).`)
    }
    if (!required && !optional.wants(name)) {
      notSent.add('body properties', name)
      continue
    }
    const fixed = required ? fixedValue(schema) : undefined
    template[name] = fixed !== undefined ? fixed : `{args.${args.take(name, 'body property')}}`
  }
  if (shape.open) notes.push('The body\'s schema allows properties beyond those listed: only the listed ones are sent.')
  return { body: { kind: 'json', template }, ...(contentType ? { contentType } : {}), notes }
}

/** A property the client must not send (readOnly: the service writes it). */
function skipped(name: string, schema: JsonTable, required: boolean, notes: string[]): boolean {
  if (schema.readOnly !== true) return false
  notes.push(`Left out: body property ${name} is readOnly (the service sets it)${required ? ', though listed as required' : ''}.`)
  return true
}

/** The one value a required property may take, when it is plain (no braces or ${ that would read as a placeholder or a variable). */
function fixedValue(schema: JsonTable): JsonValue | undefined {
  const one: Json | undefined = schema.const !== undefined ? schema.const : Array.isArray(schema.enum) && schema.enum.length === 1 ? schema.enum[0] : undefined
  if (typeof one === 'number' || typeof one === 'boolean') return one
  if (typeof one === 'string' && !/[{}$]/.test(one)) return one
  return undefined
}
