/**
 * Premises from `rests_on`: templated GETs read when the agent decides and
 * again right before dispatch. With `pointers`, only the values there are
 * kept and compared, so a field that changes on every read (`updated_at`,
 * an ETag in the body) does not reject everything; without, the whole body
 * is, as premise_url does (http-premises.ts).
 *
 *   { "reads": [ { "values": { "/status": "open", "/amount": 500 } },
 *                { "sha256": "<of the body's canonical JSON>", "body": <when at most 16 KiB> } ] }
 *
 * A value that is absent is kept as null. A read answered 404 or 410 is a
 * violation ("gone"); any other failure throws a TargetError: "cannot check
 * now" must read neither as "still holds" nor as "changed".
 */
import { canonicalJson, type JsonObject, type JsonValue } from '../../canonical-json.js'
import type { Effect, Premises } from '../../effect.js'
import { TargetError } from '../../errors.js'
import type { HttpReadTemplate } from '../../config/types-http.js'
import type { HttpAnswer } from './client.js'
import { changedFields, fingerprint } from './http-premises.js'
import { valueAt } from './pointer.js'
import { buildRequest } from './request.js'

const KEEP_BODY_LIMIT = 16 * 1024

export interface ReadSubject {
  readonly name: string
  send(method: string, url: string, headers: Record<string, string>): Promise<HttpAnswer>
  where(method: string, url: string): string
  /** The target's headers under the read's own. */
  headersFor(read: HttpReadTemplate): Record<string, string>
}

async function read(t: ReadSubject, r: HttpReadTemplate, action: string, args: JsonObject): Promise<{ answer: HttpAnswer; where: string }> {
  const req = buildRequest({ method: 'GET', url: r.url, ...(r.params ? { params: r.params } : {}), headers: t.headersFor(r) }, { action, args }, undefined, false)
  const where = t.where('GET', req.url)
  try {
    return { answer: await t.send('GET', req.url, req.headers), where }
  } catch (e) {
    throw new TargetError(`${where}: cannot read the premise: ${(e as Error).message}`, { cause: e })
  }
}

export async function captureReads(t: ReadSubject, reads: HttpReadTemplate[], action: string, args: JsonObject): Promise<Premises> {
  const kept: JsonObject[] = []
  for (const r of reads) {
    const { answer, where } = await read(t, r, action, args)
    if (answer.status < 200 || answer.status >= 300) {
      throw new TargetError(`${where} answered ${answer.status} for a premise read`, { hint: 'rests_on must read a resource that exists when the agent decides.' })
    }
    kept.push(snapshot(answer.body, r.pointers))
  }
  return { reads: kept }
}

export async function readViolations(t: ReadSubject, reads: HttpReadTemplate[] | undefined, effect: Effect): Promise<string[]> {
  const was = effect.premises.reads
  if (was === undefined) return []
  if (!Array.isArray(was)) return ['premises.reads must be a list, as capture writes it']
  if (!reads || reads.length !== was.length) {
    return [`premises hold ${was.length} read(s), but target ${t.name} now declares ${reads?.length ?? 0} for ${effect.action} in rests_on: they cannot be compared`]
  }
  const violations: string[] = []
  for (const [i, r] of reads.entries()) {
    const { answer, where } = await read(t, r, effect.action, effect.args)
    if (answer.status === 404 || answer.status === 410) {
      violations.push(`premise read ${i} is gone (${answer.status})`)
      continue
    }
    if (answer.status < 200 || answer.status >= 300) throw new TargetError(`${where} answered ${answer.status}; the premises cannot be checked now`)
    violations.push(...compare(i, was[i] as JsonObject, snapshot(answer.body, r.pointers)))
  }
  return violations
}

function snapshot(body: JsonValue, pointers: string[] | undefined): JsonObject {
  if (pointers) return { values: Object.fromEntries(pointers.map((p) => [p, valueAt(body, p) ?? null])) }
  const { sha256, canonical } = fingerprint(body)
  return Buffer.byteLength(canonical) <= KEEP_BODY_LIMIT ? { sha256, body } : { sha256 }
}

function compare(i: number, was: JsonObject, now: JsonObject): string[] {
  if (was.values && now.values) {
    const before = was.values as JsonObject
    const after = now.values as JsonObject
    return Object.keys(after)
      .filter((p) => canonicalJson(before[p] ?? null) !== canonicalJson(after[p] ?? null))
      .map((p) => `premise read ${i} changed at ${p} since the decision (was ${short(before[p] ?? null)}, now ${short(after[p] ?? null)})`)
  }
  if (was.sha256 === now.sha256) return []
  const fields = changedFields(was.body, now.body as JsonValue)
  return [`premise read ${i} changed since the decision${fields.length > 0 ? ` (fields: ${fields.join(', ')})` : ''}`]
}

function short(v: JsonValue): string {
  const s = JSON.stringify(v)
  return s.length > 80 ? `${s.slice(0, 80)}…` : s
}
