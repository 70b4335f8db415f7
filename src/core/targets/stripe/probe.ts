/**
 * `interlock check`'s read-only probe of a Stripe target: `GET /v1/balance`,
 * which "retrieves the current account balance, based on the authentication
 * that was used to make the request" (https://docs.stripe.com/api/balance/balance_retrieve).
 * It changes nothing and needs no object id, so it tells whether the key is
 * accepted and the API reachable. A restricted key without the Balance read
 * permission answers 403: the key works, but this probe cannot see more.
 */
import { serviceMessage } from '../http/body.js'
import { commonProbeAnswer } from '../http/probe-answer.js'
import type { ServiceClient } from '../http/service.js'
import type { ProbeResult } from '../target.js'

export async function probeStripe(api: ServiceClient, signal?: AbortSignal): Promise<ProbeResult> {
  const url = api.url('/v1/balance')
  const where = api.http.where('GET', url)
  const answer = await api.http.send('GET', url, {}, undefined, signal)
  const common = commonProbeAnswer(answer, where, 'api_key (STRIPE_API_KEY)')
  if (common) return common
  if (answer.status === 200) {
    const body = answer.body as { livemode?: unknown } | null
    const mode = body && typeof body === 'object' && body.livemode === true ? 'live' : 'test'
    return { ok: true, detail: `GET /v1/balance answered 200: the key is accepted (${mode} mode)` }
  }
  if (answer.status === 403) {
    return {
      ok: true,
      warn: true,
      detail: `GET /v1/balance answered 403: the key is accepted but may not read the balance (${serviceMessage(answer.body)})`,
      fix: 'Fine for a restricted key with only Charges read and Refunds write; grant Balance read to let check see more.',
    }
  }
  return { ok: false, detail: `${where} answered ${answer.status} to GET /v1/balance: ${serviceMessage(answer.body)}`, fix: 'Check base_url: it must point at the Stripe API.' }
}
