/**
 * What an HTTP failure means for the effect, as a DispatchFault kind
 * (errors.ts). The line that matters is whether the request may have reached
 * the service:
 *
 * - the connection never opened (refused, DNS, connect timeout, TLS handshake):
 *   nothing was written → 'not-sent';
 * - anything after that (reset, timeout waiting for headers or body, 5xx, a
 *   redirect) → 'unknown', since the service may have acted;
 * - an answer that says "not done": 412 → 'premise', 429 (and 409 for an
 *   idempotency key still in flight, tier 1) → 'retry-later', a 403 that
 *   carries Retry-After (a service saying "not now", as GitHub's secondary
 *   rate limit does) → 'retry-later', other 4xx → 'refused' with the
 *   service's message.
 *
 * A wait a service asks for is passed on as `retryAfterMs`; the gate waits
 * in place only up to `[gate] max_wait_ms` and returns the effect to
 * AUTHORIZED for longer ones (src/core/returned.ts).
 */
import type { JsonValue } from '../../canonical-json.js'
import { DispatchFault } from '../../errors.js'
import type { Tier } from '../../effect.js'
import { serviceMessage } from './body.js'

const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
])

function codeOf(e: unknown): string | undefined {
  const err = e as { code?: unknown; cause?: { code?: unknown }; errors?: { code?: unknown }[] }
  for (const c of [err?.code, err?.cause?.code, err?.errors?.[0]?.code]) if (typeof c === 'string') return c
  return undefined
}

/**
 * How errors name a request: the target, the method and the origin, never the
 * path, query or headers (webhook paths and query strings can carry secrets).
 */
export function requestLabel(target: string, method: string, url: string): string {
  let origin = '(invalid URL)'
  try {
    origin = new URL(url).origin
  } catch {}
  return `target ${target}: ${method} ${origin}`
}

/** A thrown network error. `where` names the request without its path or headers (they may carry secrets). */
export function faultFromError(e: unknown, where: string): DispatchFault {
  // Already classified (a fence that refused to send): keep what it says.
  if (e instanceof DispatchFault) return e
  const code = codeOf(e)
  if (code && NOT_CONNECTED.has(code)) {
    return new DispatchFault('not-sent', `${where}: could not connect (${code}); the request was not sent`, { cause: e })
  }
  const name = (e as Error)?.name
  const what =
    code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || name === 'TimeoutError'
      ? 'timed out waiting for the answer'
      : name === 'AbortError'
        ? 'was aborted'
        : `lost the connection (${code ?? name ?? 'error'})`
  return new DispatchFault('unknown', `${where} ${what}; the service may or may not have acted`, { cause: e })
}

export interface Answer {
  status: number
  body: JsonValue
  retryAfter?: string
}

/** null when the status means it happened (2xx). */
export function faultFromStatus(answer: Answer, tier: Tier, where: string, nowMs: number): DispatchFault | null {
  const { status } = answer
  if (status >= 200 && status < 300) return null
  const said = serviceMessage(answer.body)
  const context = { status }
  if (status === 412) return new DispatchFault('premise', `${where} answered 412: a precondition failed: ${said}`, { context })
  const retryAfterMs = parseRetryAfter(answer.retryAfter, nowMs)
  if (status === 429 || (status === 409 && tier === 1) || (status === 403 && retryAfterMs !== undefined)) {
    const why = status === 429 ? 'too many requests' : status === 409 ? 'the same idempotency key is still in flight' : `not now: ${said}`
    return retryLater(where, answer, why, retryAfterMs)
  }
  if (status >= 400 && status < 500) return new DispatchFault('refused', `${where} refused (${status}): ${said}`, { context })
  return new DispatchFault('unknown', `${where} answered ${status}; the service may or may not have acted: ${said}`, { context })
}

/** "Not taken, come back later": nothing was applied by this request. */
export function retryLater(where: string, answer: Pick<Answer, 'status'>, why: string, retryAfterMs?: number): DispatchFault {
  return new DispatchFault('retry-later', `${where} answered ${answer.status} (${why})${retryAfterMs === undefined ? '' : `; retry in ${retryAfterMs} ms`}`, {
    context: { status: answer.status },
    retryAfterMs,
  })
}

/** Retry-After: delay in seconds, or an HTTP date. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v) * 1000
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}
