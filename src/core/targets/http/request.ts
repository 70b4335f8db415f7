/**
 * One request from its templates and a call: the URL with its placeholders
 * and `params`, the headers, and the body in the form declared (JSON,
 * form-encoded, GraphQL) or, with none declared, Interlock's envelope
 * {"action","args","effect_id"}.
 *
 * JSON bodies go out as canonical JSON (RFC 8785), form fields in the order
 * written: the same call makes the same bytes on every retry, which
 * services that compare a retried key's request expect.
 */
import { canonicalJson, type JsonValue } from '../../canonical-json.js'
import { InputError } from '../../errors.js'
import type { RequestSpec } from './actions.js'
import { expandUrl, expandValue, scalar, type TemplateVars } from './template.js'

export interface BuiltRequest {
  method: string
  url: string
  /** The declared headers, the content type, and the effect id header when asked for. */
  headers: Record<string, string>
  body?: string
}

export const JSON_TYPE = 'application/json'
export const FORM_TYPE = 'application/x-www-form-urlencoded'

/**
 * Throws an InputError naming an argument a template needs and the call
 * lacks. `envelope`: with no body declared, send Interlock's envelope (an
 * apply) or nothing (a query, a premise read).
 */
export function buildRequest(spec: RequestSpec, vars: TemplateVars, effectIdHeader?: string, envelope = true): BuiltRequest {
  const url = withParams(expandUrl(spec.url, vars), spec.params, vars)
  const { body, type } = bodyOf(spec, vars, envelope)
  const headers: Record<string, string> = {}
  if (type && !hasHeader(spec.headers, 'content-type')) headers['content-type'] = type
  Object.assign(headers, spec.headers)
  if (effectIdHeader && vars.effect_id !== undefined) headers[effectIdHeader.toLowerCase()] = vars.effect_id
  return { method: spec.method, url, headers, ...(body === undefined ? {} : { body }) }
}

function withParams(url: string, params: Record<string, string> | undefined, vars: TemplateVars): string {
  if (!params || Object.keys(params).length === 0) return url
  const u = new URL(url)
  for (const [name, template] of Object.entries(params)) u.searchParams.append(name, scalar(`params.${name}`, expandValue(template, vars), 'a query parameter'))
  return u.toString()
}

function bodyOf(spec: RequestSpec, vars: TemplateVars, envelope: boolean): { body?: string; type?: string } {
  const b = spec.body
  if (!b && (!envelope || spec.method === 'GET')) return {}
  if (!b) return { body: canonicalJson({ action: vars.action ?? '', args: vars.args ?? {}, effect_id: vars.effect_id ?? '' }), type: JSON_TYPE }
  if (b.kind === 'json') return { body: canonicalJson(expandValue(b.template, vars)), type: JSON_TYPE }
  if (b.kind === 'graphql') {
    const doc = { query: b.query, variables: expandValue(b.variables, vars), ...(b.operationName ? { operationName: b.operationName } : {}) }
    return { body: canonicalJson(doc), type: JSON_TYPE }
  }
  const form = new URLSearchParams()
  for (const [field, template] of Object.entries(b.fields)) {
    for (const v of formValues(field, template, vars)) form.append(field, v)
  }
  return { body: form.toString(), type: FORM_TYPE }
}

/** A field's values: one, or several when the template is a list or names a list argument (a repeated field). */
function formValues(field: string, template: string | string[], vars: TemplateVars): string[] {
  const expanded: JsonValue = expandValue(template, vars)
  const values = Array.isArray(expanded) ? expanded : [expanded]
  return values.map((v) => {
    if (v === null || typeof v === 'object') {
      throw new InputError(`form field ${field} must be text, a number, true or false, or a list of them`, { hint: 'Send structured values in a JSON body instead.' })
    }
    return String(v)
  })
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((k) => k.toLowerCase() === name)
}
