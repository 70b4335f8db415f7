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
 * With `settle_ms`, a "not found" sooner than that after the effect was last
 * sent is not believed: the query throws 'retry-later' with the time left,
 * and the gate waits and asks again (within one pass: settle_ms may not
 * exceed [gate] max_wait_ms) instead of sending the effect a second time.
 * "Last sent" is this process's own last request for it in this pass, or,
 * when it sent none, the moment this pass began: a process that sent it
 * before has died or lost its lease by then (QueryContext.quietSince). A
 * request the service finishes after the client gave up on it (a timeout)
 * can show later still: settle_ms is a bound the service must honour.
 */
import type { Effect, Receipt, Tier } from '../../effect.js'
import { DispatchFault } from '../../errors.js'
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

/**
 * `since`: the latest moment a request for the effect may have left (this
 * process's last send, or when it began dispatching: another process's
 * sends came before). A "not found" is believed only settle_ms after it.
 */
export async function askFound(t: QuerySubject, spec: QuerySpec, tier: Tier, effect: Effect, since?: number): Promise<Receipt | null> {
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
  if (found || !spec.settleMs || since === undefined) return found
  const settled = since + spec.settleMs
  const now = t.now()
  if (now >= settled) return null
  throw new DispatchFault('retry-later', `${where}: not found yet, but a write takes up to ${spec.settleMs} ms to show in its answers (settle_ms); asked again in ${settled - now} ms, not sent again`, {
    retryAfterMs: settled - now,
  })
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

/**
 * When this process last sent each effect whose query lags (settle_ms): a
 * "not found" is measured from the later of that and QueryContext.quietSince.
 * An entry is kept until its settle time has passed, when it can no longer
 * matter; none is dropped sooner, which would let "not found" be believed early.
 */
export class SendClock {
  private readonly sent = new Map<string, { ms: number; until: number }>()

  /** The moment a "not found" for the effect is measured from, or undefined when none is known. */
  since(effectId: string, quietSince: number | undefined): number | undefined {
    const times = [quietSince, this.sent.get(effectId)?.ms].filter((t): t is number => t !== undefined)
    return times.length > 0 ? Math.max(...times) : undefined
  }

  noteSend(effectId: string, ms: number, settleMs: number): void {
    this.sent.delete(effectId)
    this.sent.set(effectId, { ms, until: ms + settleMs })
    // Oldest sends first (insertion order): drop those settled.
    for (const [id, e] of this.sent) {
      if (e.until > ms) break
      this.sent.delete(id)
    }
  }
}
