/**
 * `$ref`s inside one OpenAPI document, and the shape of an object schema as
 * a request body's top level: its properties and which are required, with
 * `allOf` parts merged. Only references into the same document
 * (`#/components/...`) are followed; one to another file is reported, never
 * guessed at. What a shape cannot say property by property (a `oneOf`, an
 * `anyOf`, extra properties beyond those listed) is reported too, so the
 * caller can say what it left out.
 */
import type { Json, JsonTable } from './document.js'

export type Resolved = { ok: true; value: Json } | { ok: false; problem: string }

export const isTable = (v: unknown): v is JsonTable => v !== null && typeof v === 'object' && !Array.isArray(v)

/** The value a `$ref` (or a chain of them) points to; the value itself when it is none. */
export function deref(root: JsonTable, value: Json | undefined): Resolved {
  const seen = new Set<string>()
  let node: Json | undefined = value
  while (isTable(node) && typeof node.$ref === 'string') {
    const ref = node.$ref
    if (seen.has(ref)) return { ok: false, problem: `$ref ${ref} refers to itself` }
    seen.add(ref)
    if (!ref.startsWith('#')) return { ok: false, problem: `$ref ${ref} points into another file, which is not followed` }
    node = pointerAt(root, ref.slice(1))
    if (node === undefined) return { ok: false, problem: `$ref ${ref} points to nothing in the document` }
  }
  return node === undefined ? { ok: false, problem: 'missing' } : { ok: true, value: node }
}

/** A table a `$ref` points to, or undefined (with the reason in `problems`). */
export function derefTable(root: JsonTable, value: Json | undefined, problems?: string[]): JsonTable | undefined {
  const r = deref(root, value)
  if (!r.ok) {
    if (r.problem !== 'missing') problems?.push(r.problem)
    return undefined
  }
  return isTable(r.value) ? r.value : undefined
}

/** RFC 6901, in a URI fragment (percent-encoded, as `$ref`s are written). */
function pointerAt(root: Json, pointer: string): Json | undefined {
  if (pointer === '') return root
  if (!pointer.startsWith('/')) return undefined
  let node: Json | undefined = root
  for (const raw of pointer.slice(1).split('/')) {
    let step: string
    try {
      step = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')
    } catch {
      return undefined
    }
    if (Array.isArray(node) && /^\d+$/.test(step)) node = node[Number(step)]
    else if (isTable(node) && Object.prototype.hasOwnProperty.call(node, step)) node = node[step]
    else return undefined
  }
  return node
}

export interface ObjectShape {
  /** 'object': properties listed (maybe none); 'choice': one of several shapes; 'other': not an object (a list, a string) or no schema. */
  kind: 'object' | 'choice' | 'other'
  /** Properties in the order the document lists them, each schema dereferenced where it can be. */
  properties: [string, JsonTable][]
  required: Set<string>
  /** Extra properties beyond those listed are allowed (additionalProperties). */
  open: boolean
  /** What the shape holds that is not a plain property: a oneOf beside properties, a $ref not followed. */
  problems: string[]
  /** For 'choice': how many shapes, and the keyword (oneOf, anyOf). */
  choice?: { keyword: string; count: number }
}

/** A schema's top-level shape, `allOf` parts merged in (depth-bounded: a document's schemas may refer to themselves). */
export function objectShape(root: JsonTable, schema: Json | undefined, depth = 0): ObjectShape {
  const shape: ObjectShape = { kind: 'other', properties: [], required: new Set(), open: false, problems: [] }
  const s = derefTable(root, schema, shape.problems)
  if (!s || depth > 16) return shape
  const props = new Map<string, JsonTable>()
  let isObject = s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object')) || isTable(s.properties)
  for (const part of Array.isArray(s.allOf) ? s.allOf : []) {
    const inner = objectShape(root, part, depth + 1)
    shape.problems.push(...inner.problems)
    if (inner.kind === 'choice') shape.problems.push(`a part of its allOf is one of ${inner.choice!.count} shapes (${inner.choice!.keyword}): not mapped`)
    if (inner.kind !== 'other') isObject = true
    for (const [k, v] of inner.properties) props.set(k, v)
    for (const r of inner.required) shape.required.add(r)
    shape.open ||= inner.open
  }
  if (isTable(s.properties)) {
    for (const [k, v] of Object.entries(s.properties)) props.set(k, derefTable(root, v, shape.problems) ?? {})
  }
  if (Array.isArray(s.required)) for (const r of s.required) if (typeof r === 'string') shape.required.add(r)
  if (s.additionalProperties === true || isTable(s.additionalProperties)) shape.open = true
  shape.properties = [...props]
  const keyword = ['oneOf', 'anyOf'].find((k) => Array.isArray(s[k]) && (s[k] as Json[]).length > 0)
  if (keyword) {
    const count = (s[keyword] as Json[]).length
    if (props.size === 0 && !isObject) {
      shape.kind = 'choice'
      shape.choice = { keyword, count }
      return shape
    }
    shape.problems.push(`it is also one of ${count} shapes (${keyword}): only the properties listed beside it are mapped`)
  }
  if (isObject || props.size > 0) shape.kind = 'object'
  return shape
}

/** A schema's type, for messages ("string", "array", "object"), dereferenced; undefined when it does not say. */
export function typeOf(root: JsonTable, schema: Json | undefined): string | undefined {
  const s = derefTable(root, schema)
  if (!s) return undefined
  if (typeof s.type === 'string') return s.type
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null') as string | undefined
  if (isTable(s.properties)) return 'object'
  return undefined
}
