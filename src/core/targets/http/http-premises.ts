/**
 * HTTP premises: what `premiseUrl` answered when the agent decided.
 *
 *   { "resource": { "sha256": "<sha256 of the body's canonical JSON (or text)>",
 *                   "body": <the body, when its canonical JSON is at most 16 KiB> } }
 *
 * validatePremises GETs the URL again: a different hash is a violation (naming
 * the top-level fields that changed, when both bodies are JSON objects and the
 * first was kept), 404/410 a violation ("gone"). A GET that fails otherwise
 * throws a TargetError: "cannot check now" must not read as "still holds" nor
 * as "changed".
 */
import { canonicalJson, type JsonObject, type JsonValue } from '../../canonical-json.js'
import type { Effect, Premises } from '../../effect.js'
import { TargetError } from '../../errors.js'
import { sha256Hex } from '../../hash.js'
import type { HttpAnswer } from './client.js'
import { expandUrl } from './template.js'

const KEEP_BODY_LIMIT = 16 * 1024

interface Getter {
  readonly name: string
  send(method: string, url: string, headers: Record<string, string>): Promise<HttpAnswer>
  where(method: string, url: string): string
}

export function fingerprint(body: JsonValue): { sha256: string; canonical: string } {
  const canonical = typeof body === 'string' ? body : canonicalJson(body)
  return { sha256: sha256Hex(canonical), canonical }
}

async function get(target: Getter, url: string): Promise<HttpAnswer> {
  try {
    return await target.send('GET', url, {})
  } catch (e) {
    throw new TargetError(`${target.where('GET', url)}: cannot read the premise resource: ${(e as Error).message}`, { cause: e })
  }
}

export async function capturePremise(target: Getter, template: string, action: string, args: JsonObject): Promise<Premises> {
  const url = expandUrl(template, { action, args })
  const answer = await get(target, url)
  if (answer.status < 200 || answer.status >= 300) {
    throw new TargetError(`${target.where('GET', url)} answered ${answer.status} for the premise resource`, {
      hint: 'premise_url must name a resource that exists when the agent decides.',
    })
  }
  const { sha256, canonical } = fingerprint(answer.body)
  const resource: JsonObject = { sha256 }
  if (Buffer.byteLength(canonical) <= KEEP_BODY_LIMIT) resource.body = answer.body
  return { resource }
}

export async function validatePremise(target: Getter, template: string | undefined, effect: Effect): Promise<string[]> {
  const resource = effect.premises.resource
  if (resource === undefined) return []
  if (resource === null || typeof resource !== 'object' || Array.isArray(resource) || typeof resource.sha256 !== 'string') {
    return ['premises.resource must be { sha256, body? } as capture writes it']
  }
  if (!template) return [`premises name a resource, but target ${target.name} has no premise_url to check it against`]
  const url = expandUrl(template, { action: effect.action, args: effect.args })
  const answer = await get(target, url)
  if (answer.status === 404 || answer.status === 410) return [`the premise resource is gone (${answer.status})`]
  if (answer.status < 200 || answer.status >= 300) {
    throw new TargetError(`${target.where('GET', url)} answered ${answer.status}; the premises cannot be checked now`)
  }
  const now = fingerprint(answer.body)
  if (now.sha256 === resource.sha256) return []
  const fields = changedFields(resource.body, answer.body)
  const which = fields.length > 0 ? ` (fields: ${fields.join(', ')})` : ''
  return [`the premise resource changed since the decision${which} (was ${resource.sha256.slice(0, 12)}…, now ${now.sha256.slice(0, 12)}…)`]
}

export function changedFields(was: JsonValue | undefined, now: JsonValue): string[] {
  const isObj = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v)
  if (!isObj(was) || !isObj(now)) return []
  const keys = new Set([...Object.keys(was), ...Object.keys(now)])
  return [...keys].filter((k) => canonicalJson(was[k] ?? null) !== canonicalJson(now[k] ?? null)).sort()
}
