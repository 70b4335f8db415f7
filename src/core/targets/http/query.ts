/**
 * Tier 2: asking the service whether an effect happened, by the declared
 * query (a GET of `query_url`, or a templated request such as a JQL or
 * GraphQL search for a marker the write carried).
 *
 * - a status in not_found_status (default 404): it did not happen;
 * - with `found`: a 2xx answer with a value at that pointer (equal to
 *   found_equals, or a list containing it, when given) says it did; without
 *   one, it did not;
 * - without `found`: a status in found_status (default any 2xx) says it did;
 * - anything else is read as an apply's answer is (faults.ts) and thrown:
 *   the gate asks again later rather than guess.
 *
 * A search index lags behind writes (Jira's JQL search is eventually
 * consistent: developer.atlassian.com/cloud/jira/platform/search-and-reconcile).
 * With `settle_ms`, a "not found" sooner than that after the effect was sent
 * is not believed: the query throws, and the gate asks again later instead
 * of sending the effect a second time.
 */
import type { Effect, Receipt, Tier } from '../../effect.js'
import { DispatchFault, TargetError } from '../../errors.js'
import type { QuerySpec } from './actions.js'
import { foundReceipt, present } from './answers.js'
import type { HttpAnswer } from './client.js'
import { faultFromStatus } from './faults.js'
import { valueAt } from './pointer.js'
import { buildRequest } from './request.js'
import { expandText, type TemplateVars } from './template.js'
import { declaredOutcome } from './answers.js'
import type { RequestGuard } from './fence.js'

export interface QuerySubject {
  send(method: string, url: string, headers: Record<string, string>, body?: string, guard?: AbortSignal | RequestGuard): Promise<HttpAnswer>
  where(method: string, url: string): string
  now(): number
}

export async function askFound(t: QuerySubject, spec: QuerySpec, tier: Tier, effect: Effect, dispatchedAt?: number): Promise<Receipt | null> {
  const vars: TemplateVars = { effect_id: effect.id, action: effect.action, args: effect.args }
  let req
  try {
    req = buildRequest(spec, vars, undefined, false)
  } catch (e) {
    // The call lacks what the query needs: asking is impossible, and sending again could apply twice.
    throw new DispatchFault('unknowable', `target query for ${effect.action}: ${(e as Error).message}`, { cause: e })
  }
  const answer = await t.send(req.method, req.url, req.headers, req.body)
  const where = t.where(req.method, req.url)
  const found = readAnswer(answer, spec, tier, where, t.now(), vars)
  if (found || !spec.settleMs || dispatchedAt === undefined) return found
  const settled = dispatchedAt + spec.settleMs
  if (t.now() >= settled) return null
  throw new TargetError(
    `${where}: not found yet, but a write takes up to ${spec.settleMs} ms to show in its answers (settle_ms); asked again later, not sent again`,
  )
}

function readAnswer(answer: HttpAnswer, spec: QuerySpec, tier: Tier, where: string, nowMs: number, vars: TemplateVars): Receipt | null {
  if (declaredOutcome(answer.status, { unknown: spec.notFoundStatus ?? [404] }) === 'unknown') return null
  const ok = answer.status >= 200 && answer.status < 300
  if (spec.found !== undefined && ok) {
    const v = present(valueAt(answer.body, spec.found))
    if (v === undefined) return null
    if (spec.foundEquals !== undefined) {
      const expected = expandText(spec.foundEquals, vars)
      const same = (x: unknown) => (typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean') && String(x) === expected
      if (!(Array.isArray(v) ? v.some(same) : same(v))) return null
    }
    return foundReceipt(answer, spec.receipt)
  }
  if (spec.found === undefined && declaredOutcome(answer.status, { committed: spec.foundStatus ?? ['2xx'] }) === 'committed') {
    return foundReceipt(answer, spec.receipt)
  }
  throw (
    faultFromStatus(answer, tier, where, nowMs) ??
    new DispatchFault('unknown', `${where} answered ${answer.status}, which the query's found_status does not list; whether the effect happened is not known yet`, {
      context: { status: answer.status },
    })
  )
}
