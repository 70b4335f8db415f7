/**
 * A refund already made for an effect, found by the effect id in its metadata
 * among the charge's refunds (`GET /v1/refunds?charge=…`,
 * https://docs.stripe.com/api/refunds/list).
 *
 * The idempotency key is the guard, and this the backstop for what a key
 * cannot cover: Stripe may prune a key once it is 24 hours old, and a request
 * with a pruned key is a new refund (https://docs.stripe.com/idempotency). A
 * relay down over a weekend would recover its in-flight refunds with keys
 * Stripe no longer knows, so recovery looks first. A lookup that cannot be
 * made is not fatal: the key still holds within its 24 hours.
 */
import type { JsonObject } from '../../canonical-json.js'
import type { ServiceClient } from '../http/service.js'

const PAGE = 100
/** Pages read at most: a charge with more refunds than this is not one an agent refunds again. */
const MAX_PAGES = 10

/** The refund object, null when none carries the effect id, undefined when Stripe could not be asked. */
export async function findRefund(api: ServiceClient, charge: string, effectId: string): Promise<JsonObject | null | undefined> {
  let after: string | undefined
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ charge, limit: String(PAGE) })
    if (after) query.set('starting_after', after)
    let answer
    try {
      answer = await api.http.send('GET', api.url(`/v1/refunds?${query}`))
    } catch {
      return undefined
    }
    const body = answer.body as JsonObject | null
    const data = body?.data
    if (answer.status !== 200 || !Array.isArray(data)) return undefined
    for (const item of data) {
      const refund = item as JsonObject
      if ((refund.metadata as JsonObject | undefined)?.interlock_effect_id === effectId) return refund
    }
    const last = data[data.length - 1] as JsonObject | undefined
    if (body?.has_more !== true || typeof last?.id !== 'string') return null
    after = last.id
  }
  return undefined
}
