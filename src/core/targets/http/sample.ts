/**
 * `interlock check`'s picture of what an http target sends: per action, the
 * request a sample call would make (method, URL, headers, body), built from
 * the templates exactly as apply builds it (request.ts), so a reviewer sees
 * the service's own shape, or Interlock's envelope, before anything is
 * sent. Nothing is sent: the rows come from the config alone.
 *
 * The sample call carries each argument a template names as "sample-<name>"
 * (numbers and lists are the service's business to check), and the effect
 * id as a sample too. Every header value declared in the file and every
 * `${VAR}` value is masked as *** wherever it appears.
 */
import type { JsonObject, JsonValue } from '../../canonical-json.js'
import type { HttpTargetConfig } from '../../config/types.js'
import { SecretMatcher } from '../../secrets/matcher.js'
import type { ProbeRow } from '../target.js'
import { allSpecs, specsOf, type ActionSpec } from './actions.js'
import { buildRequest } from './request.js'
import { argPathOf, placeholdersOf } from './template.js'
import { templatesOf } from './templates.js'

/** A sample effect id: 64 hex digits, as real ones are, and plainly not one. */
export const SAMPLE_EFFECT_ID = '5a3b1e'.padEnd(64, '0')
const BODY_SHOWN = 600

/** One row per action (one for "any action" without `actions`): `actions.<a>.request` or `request`. */
export function sampleRows(name: string, config: HttpTargetConfig, secrets: readonly string[] = []): ProbeRow[] {
  const specs = allSpecs(specsOf(name, config))
  const headerValues = specs.flatMap((s) => [s.request.headers, s.query?.headers ?? {}, ...(s.restsOn ?? []).map((r) => r.headers ?? {})]).flatMap(Object.values)
  const mask = new SecretMatcher([...headerValues, ...secrets], { minLength: 4 })
  return specs.map((spec) => {
    const id = spec.action === null ? 'request' : `actions.${spec.action}.request`
    const title = spec.action === null ? 'request for a sample call (any action)' : `request for a sample ${spec.action} call`
    try {
      return { id, name: title, status: 'pass', detail: mask.redact(describe(spec)) }
    } catch (e) {
      return { id, name: title, status: 'fail', detail: mask.redact((e as Error).message), fix: `Fix the templates of ${spec.keyPath} in interlock.toml.`, config: true }
    }
  })
}

function describe(spec: ActionSpec): string {
  const action = spec.action ?? 'sample_action'
  const args = sampleArgs(spec)
  const req = buildRequest(spec.request, { effect_id: SAMPLE_EFFECT_ID, action, args }, spec.effectIdHeader)
  const headers = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`)
  const body = req.body === undefined ? '' : `; body: ${req.body.length > BODY_SHOWN ? `${req.body.slice(0, BODY_SHOWN)}… (${req.body.length} bytes)` : req.body}`
  const tier = `tier ${spec.tier}`
  const query = spec.query ? `; asked by ${spec.query.method} ${spec.query.url}${spec.query.found ? ` (found: ${spec.query.found})` : ''}` : ''
  return `${req.method} ${req.url}; headers: ${headers.join(', ') || 'none'}${body} (${tier}, args ${JSON.stringify(args)}, effect id ${SAMPLE_EFFECT_ID.slice(0, 6)}…${query})`
}

/** Every argument a template names, as "sample-<name>" at its path; the declared ones too. */
function sampleArgs(spec: ActionSpec): JsonObject {
  const args: JsonObject = {}
  for (const a of spec.args ?? []) args[a] = `sample-${a}`
  for (const [, template] of templatesOf(spec)) {
    for (const p of placeholdersOf(template)) {
      const path = argPathOf(p)
      if (path) put(args, path, `sample-${path.join('.')}`)
    }
  }
  return args
}

function put(into: JsonObject, path: string[], value: string): void {
  // A list is indexed by the same strings ("0") as an object is keyed: JavaScript reads both alike.
  let node = into as Record<string, JsonValue>
  path.forEach((step, i) => {
    if (i === path.length - 1) {
      if (!(step in node)) node[step] = value
      return
    }
    const next = node[step]
    if (next === null || next === undefined || typeof next !== 'object') node[step] = /^\d+$/.test(path[i + 1]!) ? [] : {}
    node = node[step] as Record<string, JsonValue>
  })
}
