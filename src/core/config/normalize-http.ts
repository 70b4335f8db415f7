/**
 * An http target's request templates after schema validation: snake_case →
 * camelCase, the body's three forms (body, form, graphql) as one tagged
 * value. A JSON-text body is parsed here when it parses; one that does not
 * is kept as text, and the load-time check (targets/http/templates.ts)
 * names it with its key path. The casts are safe because the document
 * passed the schema.
 */
import type { JsonObject, JsonValue } from '../canonical-json.js'
import type { Tier } from '../effect.js'
import type { HttpActionConfig, HttpBodyTemplate, HttpQueryTemplate, HttpReadTemplate, HttpTemplateKeys, StatusSpec } from './types-http.js'

type Table = Record<string, unknown>

/** The template keys of a target table or of one action (only those given). */
export function normalizeHttpTemplates(raw: Table): HttpTemplateKeys {
  const out: HttpTemplateKeys = { ...requestOf(raw) }
  for (const [key, field] of [['committed', 'committed'], ['failed', 'failed'], ['retry_later', 'retryLater'], ['unknown', 'unknown']] as const) {
    if (Array.isArray(raw[key])) out[field] = [...(raw[key] as StatusSpec[])]
  }
  if (typeof raw.receipt === 'string') out.receipt = raw.receipt
  if (typeof raw.error === 'string') out.error = raw.error
  if (typeof raw.effect_id_header === 'string') out.effectIdHeader = raw.effect_id_header
  if (raw.query !== undefined) out.query = queryOf(raw.query as Table)
  if (Array.isArray(raw.rests_on)) out.restsOn = (raw.rests_on as Table[]).map(readOf)
  return out
}

export function normalizeHttpActions(raw: unknown): Record<string, HttpActionConfig> | undefined {
  if (raw === undefined) return undefined
  const actions: Record<string, HttpActionConfig> = {}
  for (const [name, table] of Object.entries(raw as Record<string, Table>)) {
    const action: HttpActionConfig = normalizeHttpTemplates(table)
    if (typeof table.method === 'string') action.method = table.method as HttpActionConfig['method']
    if (typeof table.url === 'string') action.url = table.url
    if (table.headers !== undefined) action.headers = { ...(table.headers as Record<string, string>) }
    if (typeof table.tier === 'number') action.tier = table.tier as Tier
    if (Array.isArray(table.args)) action.args = [...(table.args as string[])]
    actions[name] = action
  }
  return actions
}

function requestOf(raw: Table): Pick<HttpTemplateKeys, 'params' | 'body'> {
  const out: Pick<HttpTemplateKeys, 'params' | 'body'> = {}
  if (raw.params !== undefined) out.params = { ...(raw.params as Record<string, string>) }
  const body = bodyOf(raw)
  if (body) out.body = body
  return out
}

/** The one body given (the schema refuses several at once). */
function bodyOf(raw: Table): HttpBodyTemplate | undefined {
  if (typeof raw.body === 'string') {
    try {
      return { kind: 'json', template: JSON.parse(raw.body) as JsonValue, text: raw.body }
    } catch {
      return { kind: 'json', template: null, text: raw.body }
    }
  }
  if (raw.body !== undefined) return { kind: 'json', template: raw.body as JsonValue }
  if (raw.form !== undefined) return { kind: 'form', fields: { ...(raw.form as Record<string, string | string[]>) } }
  if (raw.graphql !== undefined) {
    const g = raw.graphql as Table
    return {
      kind: 'graphql',
      query: g.query as string,
      variables: { ...((g.variables as JsonObject | undefined) ?? {}) },
      ...(typeof g.operation_name === 'string' ? { operationName: g.operation_name } : {}),
    }
  }
  return undefined
}

function queryOf(raw: Table): HttpQueryTemplate {
  const q: HttpQueryTemplate = { ...requestOf(raw) }
  if (typeof raw.method === 'string') q.method = raw.method as HttpQueryTemplate['method']
  if (typeof raw.url === 'string') q.url = raw.url
  if (raw.headers !== undefined) q.headers = { ...(raw.headers as Record<string, string>) }
  if (typeof raw.found === 'string') q.found = raw.found
  if (typeof raw.found_equals === 'string') q.foundEquals = raw.found_equals
  if (Array.isArray(raw.found_status)) q.foundStatus = [...(raw.found_status as StatusSpec[])]
  if (Array.isArray(raw.not_found_status)) q.notFoundStatus = [...(raw.not_found_status as StatusSpec[])]
  if (typeof raw.receipt === 'string') q.receipt = raw.receipt
  if (typeof raw.settle_ms === 'number') q.settleMs = raw.settle_ms
  return q
}

function readOf(raw: Table): HttpReadTemplate {
  const r: HttpReadTemplate = { url: raw.url as string }
  if (raw.params !== undefined) r.params = { ...(raw.params as Record<string, string>) }
  if (raw.headers !== undefined) r.headers = { ...(raw.headers as Record<string, string>) }
  if (Array.isArray(raw.pointers)) r.pointers = [...(raw.pointers as string[])]
  return r
}

