/**
 * A refund's status is not final when Stripe answers: `pending` (a bank
 * refund, a balance too low to cover it) and `requires_action` become
 * `succeeded`, or `failed` with a `failure_reason` when the customer's bank or
 * card issuer cannot take the money back, the amount returning to the Stripe
 * balance, or `canceled` (https://docs.stripe.com/api/refunds/object,
 * https://docs.stripe.com/refunds#failed-refunds). The receipt keeps the
 * status Stripe answered with; `reconcile-effects` asks again, with
 * `GET /v1/refunds/{id}` (https://docs.stripe.com/api/refunds/retrieve), for
 * the refunds whose receipt is not final, and reports those that failed.
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Receipt } from '../../effect.js'
import { TargetError } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { ServiceClient } from '../http/service.js'
import type { LaterOutcome } from '../target.js'

/** Statuses Stripe may still change. */
export const UNSETTLED = ['pending', 'requires_action'] as const

export function unsettled(status: unknown): boolean {
  return (UNSETTLED as readonly unknown[]).includes(status)
}

export async function refundNow(api: ServiceClient, receipt: Receipt): Promise<LaterOutcome | null> {
  if (!unsettled(receipt.status) || typeof receipt.refund !== 'string') return null
  const id = receipt.refund
  const url = api.url(`/v1/refunds/${encodeURIComponent(id)}`)
  const where = api.http.where('GET', url)
  const answer = await api.http.send('GET', url).catch((e: unknown) => {
    throw new TargetError(`${where}: cannot read refund ${id}: ${(e as Error).message}`, { cause: e })
  })
  const body = answer.body as JsonObject | null
  if (answer.status !== 200 || typeof body?.status !== 'string') {
    throw new TargetError(`${where} answered ${answer.status} for refund ${id}: ${serviceMessage(answer.body)}`)
  }
  const status = body.status
  const what = `refund ${id} of ${String(receipt.amount_decimal ?? receipt.amount)} ${String(receipt.currency ?? '').toUpperCase()} on charge ${String(receipt.charge)}`
  const failed = status === 'failed' || status === 'canceled'
  const reason = typeof body.failure_reason === 'string' ? ` (failure_reason: ${body.failure_reason})` : ''
  return {
    status,
    failed,
    pending: unsettled(status),
    detail: failed
      ? `${what} was answered ${String(receipt.status)}, and is ${status} now${reason}: the money did not reach the customer`
      : `${what} was answered ${String(receipt.status)}, and is ${status} now`,
  }
}
