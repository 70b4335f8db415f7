/**
 * `interlock check`'s read-only probe of an http target. Only safe methods
 * (RFC 9110 §9.2.1: GET and HEAD are read-only by definition):
 * - tier 2 with a query_url that needs nothing but {effect_id}: GET it for an
 *   effect id that cannot exist. 404 is the answer recovery relies on ("it
 *   did not happen"); a 2xx would make recovery skip an effect that never
 *   happened, so the tier cannot be honoured;
 * - otherwise: HEAD on the origin of `url`. Any HTTP answer means reachable;
 *   401 means the configured credential header was refused.
 * The service's own idempotency (tier 1) cannot be seen from outside; the
 * check says so instead of pretending.
 */
import { commonProbeAnswer } from './probe-answer.js'
import type { ProbeResult } from '../target.js'
import type { HttpAnswer } from './client.js'
import { expandUrl, placeholdersOf } from './template.js'

export interface HttpProbeSubject {
  tier: 1 | 2 | 3
  url: string
  queryUrl?: string
  send(method: string, url: string, extra: Record<string, string>, body?: string, signal?: AbortSignal): Promise<HttpAnswer>
  where(method: string, url: string): string
}

/** An effect id no gate ever makes (ids are hex digests), so a 2xx for it is a wrong answer. */
export const PROBE_EFFECT_ID = 'interlock-check-no-such-effect'

export async function probeHttp(t: HttpProbeSubject, signal?: AbortSignal): Promise<ProbeResult> {
  const askable = t.tier === 2 && t.queryUrl !== undefined && placeholdersOf(t.queryUrl).every((p) => p === 'effect_id')
  if (askable) {
    const url = expandUrl(t.queryUrl!, { effect_id: PROBE_EFFECT_ID })
    const where = t.where('GET', url)
    const answer = await t.send('GET', url, {}, undefined, signal)
    const common = commonProbeAnswer(answer, where, 'the Authorization header in headers')
    if (common) return common
    if (answer.status === 404) {
      return { ok: true, detail: 'query_url answered 404 for an effect that never happened', tier: { ok: true, detail: 'query_url says "not found" for an unknown effect id, as recovery needs' } }
    }
    if (answer.status >= 200 && answer.status < 300) {
      return {
        ok: true,
        detail: `query_url answered ${answer.status}`,
        tier: {
          ok: false,
          detail: `query_url answered ${answer.status} for an effect id that never existed: recovery would take every effect as done and never re-apply it`,
          fix: 'query_url must answer 404 when no effect with that id happened; fix the service or declare tier 3.',
        },
      }
    }
    return { ok: true, warn: true, detail: `query_url answered ${answer.status} for an unknown effect id (404 expected)`, fix: 'Recovery reads 2xx as "happened" and 404 as "did not"; check what this status means.' }
  }
  const origin = new URL(t.url.replace(/\{[^}]*\}/g, 'x')).origin
  const where = t.where('HEAD', origin)
  const answer = await t.send('HEAD', `${origin}/`, {}, undefined, signal)
  const common = commonProbeAnswer(answer, where, 'the Authorization header in headers')
  if (common && answer.status === 401) return common
  return { ok: true, detail: `HEAD ${origin}/ answered ${answer.status}: the service is reachable` }
}
