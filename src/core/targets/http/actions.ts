/**
 * What one action of an http target sends and how its answer is read: the
 * target's keys as defaults, the action's own ([targets.<n>.actions.<a>])
 * over them. A target that declares no `actions` takes any action with its
 * own keys; one that does takes only those.
 *
 * With no body, form or graphql anywhere the body is Interlock's envelope
 * {"action","args","effect_id"} (envelope.ts), and the target-level
 * `query_url` / `premise_url` keep their meaning: configs written before
 * request templates existed send what they always sent.
 */
import type { HttpTargetConfig } from '../../config/types.js'
import type { HttpAnswerRules, HttpBodyTemplate, HttpQueryTemplate, HttpReadTemplate, HttpTemplateKeys } from '../../config/types-http.js'
import type { Tier } from '../../effect.js'

export interface RequestSpec {
  method: string
  url: string
  params?: Record<string, string>
  /** The declared headers (target's, then action's or query's over them); values are secrets. */
  headers: Record<string, string>
  /** Absent: Interlock's envelope. */
  body?: HttpBodyTemplate
}

export interface ActionSpec {
  /** The action's name; null for a target without `actions`, whose keys serve every action. */
  action: string | null
  /** Where this spec is declared, for messages: `targets.<n>` or `targets.<n>.actions.<a>`. */
  keyPath: string
  tier: Tier
  /** The top-level arguments the action takes, when declared. */
  args?: string[]
  request: RequestSpec
  /** Header the effect id goes in; absent: none (it may ride in a template). */
  effectIdHeader?: string
  rules: HttpAnswerRules
  query?: QuerySpec
  restsOn?: HttpReadTemplate[]
}

export type QuerySpec = Omit<HttpQueryTemplate, 'method' | 'url' | 'headers'> & RequestSpec

export interface TargetSpecs {
  /** Every action's spec when `actions` is declared; else empty and `any` serves all. */
  actions: Map<string, ActionSpec>
  any?: ActionSpec
}

export function specsOf(name: string, c: HttpTargetConfig): TargetSpecs {
  const base = `targets.${name}`
  if (!c.actions) return { actions: new Map(), any: specOf(c, {}, null, base) }
  const actions = new Map<string, ActionSpec>()
  for (const [action, own] of Object.entries(c.actions)) actions.set(action, specOf(c, own, action, `${base}.actions.${action}`))
  return { actions }
}

/** The spec an action is sent by, or undefined for one the target does not take. */
export function specFor(specs: TargetSpecs, action: string): ActionSpec | undefined {
  return specs.any ?? specs.actions.get(action)
}

export function allSpecs(specs: TargetSpecs): ActionSpec[] {
  return specs.any ? [specs.any] : [...specs.actions.values()]
}

function specOf(c: HttpTargetConfig, own: HttpTemplateKeys & { tier?: Tier; args?: string[] }, action: string | null, keyPath: string): ActionSpec {
  const tier = own.tier ?? c.tier
  const pick = <K extends keyof HttpTemplateKeys>(k: K): HttpTemplateKeys[K] => (own[k] !== undefined ? own[k] : c[k])
  const body = pick('body')
  const rules: HttpAnswerRules = {}
  for (const k of ['committed', 'failed', 'retryLater', 'unknown', 'receipt', 'error'] as const) {
    const v = pick(k)
    if (v !== undefined) (rules as Record<string, unknown>)[k] = v
  }
  // A GraphQL service answers its errors in the body, often with 200 (spec.graphql.org, "Response", "Errors").
  if (body?.kind === 'graphql' && rules.error === undefined) rules.error = '/errors/0/message'
  const spec: ActionSpec = {
    action,
    keyPath,
    tier,
    request: {
      method: own.method ?? c.method,
      url: own.url ?? c.url,
      ...(pick('params') ? { params: pick('params') } : {}),
      headers: { ...c.headers, ...(own.headers ?? {}) },
      ...(body ? { body } : {}),
    },
    rules,
  }
  if (own.args) spec.args = own.args
  const header = pick('effectIdHeader') ?? (tier === 1 ? 'Idempotency-Key' : undefined)
  if (header) spec.effectIdHeader = header
  const query = queryOf(c, own.query)
  if (query) spec.query = query
  const restsOn = pick('restsOn')
  if (restsOn) spec.restsOn = restsOn
  return spec
}

/** The action's query over the target's, key by key; or the target's query_url as a GET. */
function queryOf(c: HttpTargetConfig, own: HttpQueryTemplate | undefined): QuerySpec | undefined {
  const merged: HttpQueryTemplate | undefined = c.query || own ? { ...c.query, ...own } : undefined
  if (merged) {
    const { method, url, headers, ...rest } = merged
    return { ...rest, method: method ?? 'GET', url: url ?? c.queryUrl ?? c.url, headers: { ...c.headers, ...(c.query?.headers ?? {}), ...(own?.headers ?? {}) } }
  }
  if (c.queryUrl) return { method: 'GET', url: c.queryUrl, headers: { ...c.headers } }
  return undefined
}
