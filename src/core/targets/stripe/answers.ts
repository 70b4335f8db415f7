/**
 * What an answer to `POST /v1/refunds` means, beyond the status code.
 *
 * - `Stripe-Should-Retry` is Stripe's own word on a retry and wins over the
 *   status (as Stripe's SDKs treat it: stripe-node's RequestSender,
 *   `_shouldRetry`): `true` → 'retry-later', the same key again (a 429
 *   `lock_timeout`, https://docs.stripe.com/rate-limits); `false` → no retry
 *   can change the answer.
 * - A saved answer: Stripe keeps the first answer to a key "including 500
 *   errors" and replays it on every retry with that key
 *   (https://docs.stripe.com/api/idempotent_requests). A 5xx that is replayed
 *   (`Idempotent-Replayed: true`), or that Stripe says not to retry, will come
 *   back the same for as long as Stripe keeps the key: sending again cannot
 *   settle it, so the refund lookup does (stripe-target.ts, `settleSaved`).
 *   A first 5xx without either header is an unknown outcome: the same key
 *   again fetches what Stripe saved.
 * - 409 `idempotency_key_in_use`: the first request with this key is still
 *   running → 'retry-later'; 400 `idempotency_error`: the key was used with
 *   other parameters → 'refused'. Everything else is http/faults.ts's rule.
 */
import type { JsonObject } from '../../canonical-json.js'
import { DispatchFault } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { HttpAnswer } from '../http/client.js'
import { faultFromStatus, parseRetryAfter } from '../http/faults.js'

export type RefundAnswer =
  | { kind: 'refund'; body: JsonObject }
  /** An error a retry with the key cannot change (a saved 500): only the lookup can tell whether the refund was made. */
  | { kind: 'saved-error'; status: number; said: string }
  | { kind: 'fault'; fault: DispatchFault }

export function readRefundAnswer(answer: HttpAnswer, where: string, nowMs: number): RefundAnswer {
  const error = (answer.body as JsonObject | null)?.error as JsonObject | undefined
  const code = typeof error?.code === 'string' ? error.code : undefined
  const type = typeof error?.type === 'string' ? error.type : undefined
  const context = { status: answer.status, ...(code ? { code } : {}), ...(type ? { type } : {}) }
  const shouldRetry = answer.headers['stripe-should-retry']
  const said = serviceMessage(answer.body)

  if (answer.status >= 200 && answer.status < 300) {
    const body = answer.body
    if (body === null || typeof body !== 'object' || Array.isArray(body) || typeof body.id !== 'string') {
      // A 2xx we cannot read may still be a refund: the same key will fetch Stripe's saved answer.
      return { kind: 'fault', fault: new DispatchFault('unknown', `${where} answered ${answer.status} without a refund object`, { context }) }
    }
    return { kind: 'refund', body }
  }
  if (shouldRetry === 'true') {
    const retryAfterMs = parseRetryAfter(answer.headers['retry-after'], nowMs)
    return {
      kind: 'fault',
      fault: new DispatchFault('retry-later', `${where} answered ${answer.status} (${code ?? type ?? 'error'}) with Stripe-Should-Retry: true; retried with the same key: ${said}`, { context, retryAfterMs }),
    }
  }
  // An answer we would otherwise send again for, that a retry cannot change.
  const retryable = answer.status >= 500 || answer.status === 409 || answer.status === 429
  if (retryable && (shouldRetry === 'false' || (answer.status >= 500 && answer.headers['idempotent-replayed'] === 'true'))) {
    return { kind: 'saved-error', status: answer.status, said }
  }
  if (answer.status === 409) {
    return {
      kind: 'fault',
      fault: new DispatchFault('retry-later', `${where} answered 409 (${code ?? 'conflict'}): the first request with this idempotency key is still running; retry with the same key`, { context }),
    }
  }
  if (answer.status === 400 && type === 'idempotency_error') {
    return { kind: 'fault', fault: new DispatchFault('refused', `${where} refused the idempotency key (idempotency_error): ${said}`, { context }) }
  }
  const fault = faultFromStatus(answer, 1, where, nowMs)!
  return { kind: 'fault', fault: new DispatchFault(fault.kind, fault.message, { context, retryAfterMs: fault.retryAfterMs }) }
}
