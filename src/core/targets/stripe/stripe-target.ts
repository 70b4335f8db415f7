/**
 * Stripe refunds, tier 1: `POST /v1/refunds` with `Idempotency-Key: <effect id>`.
 *
 * Stripe saves the answer to the first request with a key and answers every
 * retry with it, so the gate resends with the same key after a crash or an
 * unknown outcome and the refund happens once
 * (https://docs.stripe.com/api/idempotent_requests). Two answers are about
 * the key itself:
 * - 409 `idempotency_key_in_use`: the first request with this key is still
 *   running → 'retry-later' (same key, after a back-off);
 * - 400 `idempotency_error`: this key was used with other parameters → 'refused'
 *   with Stripe's message; nothing was refunded by this request.
 * Everything else is faults.ts's rule (429 retry later, other 4xx refused,
 * 5xx and lost connections unknown).
 *
 * Recovery first looks for a refund carrying the effect id in its metadata
 * (refund-lookup.ts): Stripe may prune a key after 24 hours, and recovery may
 * come later than that.
 *
 * Premises: the charge, read with `GET /v1/charges/{id}` (charge-premises.ts).
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault, InputError, TargetError } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { HttpAnswer, HttpClientOptions } from '../http/client.js'
import { faultFromStatus } from '../http/faults.js'
import { bearerService, type ServiceClient, type ServiceSettings } from '../http/service.js'
import type { ApplyContext, EffectTarget, ProbeResult } from '../target.js'
import { chargeOf, chargePremises, checkCharge, type Charge } from './charge-premises.js'
import { fromMinorUnits } from './money.js'
import { parseRefund, refundForm, type Refund } from './refund-args.js'
import { findRefund } from './refund-lookup.js'
import { probeStripe } from './probe.js'

export const STRIPE_API = 'https://api.stripe.com'

export interface StripeTargetSettings extends Partial<ServiceSettings> {
  /** A secret or restricted key allowed to read charges and create refunds. */
  apiKey: string
}

export class StripeRefundTarget implements EffectTarget {
  readonly tier = 1 as const
  readonly notCompensable =
    'a Stripe refund cannot be taken back through the API: the money is on its way to the customer, and charging it again is a new payment that needs the customer'
  private readonly api: ServiceClient

  constructor(
    readonly name: string,
    settings: StripeTargetSettings,
    options: HttpClientOptions = {},
  ) {
    this.api = bearerService(name, 'api_key', settings.apiKey, { ...settings, baseUrl: settings.baseUrl ?? STRIPE_API }, options)
  }

  validateArgs(action: string, args: JsonObject): void {
    parseRefund(action, args)
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    const refund = parseRefund(action, args)
    const charge = await this.charge(refund.charge)
    if (!charge) throw new InputError(`args.charge: Stripe has no charge ${refund.charge}`)
    if (charge.currency !== refund.currency) {
      throw new InputError(`args.currency is ${refund.currency.toUpperCase()}, but charge ${charge.id} is in ${charge.currency.toUpperCase()}`)
    }
    return chargePremises(charge)
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    let refund
    try {
      refund = parseRefund(effect.action, effect.args)
    } catch (e) {
      // Journaled by a caller that skipped validateArgs: the refund can never be sent, so say why before anything is.
      if (e instanceof InputError) return [e.message]
      throw e
    }
    return checkCharge(refund, effect.premises, await this.charge(refund.charge))
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let refund
    try {
      refund = parseRefund(effect.action, effect.args)
    } catch (e) {
      throw new DispatchFault('refused', `target ${this.name}: ${(e as Error).message}; nothing was sent`, { cause: e })
    }
    if (ctx.recovering) {
      const found = await findRefund(this.api, refund.charge, effect.id)
      if (found) return { ...receiptOf(found, refund), found: true }
    }
    const url = this.api.url('/v1/refunds')
    const answer = await this.api.http.send(
      'POST',
      url,
      { 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': effect.id },
      refundForm(refund, effect.id),
      ctx,
    )
    const where = this.api.http.where('POST', url)
    const fault = this.faultOf(answer, where)
    if (fault) throw fault
    const body = answer.body
    if (body === null || typeof body !== 'object' || Array.isArray(body) || typeof body.id !== 'string') {
      // A 2xx we cannot read may still be a refund: the same key will fetch Stripe's saved answer.
      throw new DispatchFault('unknown', `${where} answered ${answer.status} without a refund object`, { context: { status: answer.status } })
    }
    const receipt = receiptOf(body, refund)
    if (answer.headers['idempotent-replayed'] === 'true') receipt.replayed = true
    return receipt
  }

  /** `interlock check`: GET /v1/balance, read-only (probe.ts). */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeStripe(this.api, signal)
  }

  async close(): Promise<void> {
    await this.api.http.close()
  }

  /** The charge now, or null when Stripe says there is none. Any other failure means "cannot check now". */
  private async charge(id: string): Promise<Charge | null> {
    const url = this.api.url(`/v1/charges/${encodeURIComponent(id)}`)
    const where = this.api.http.where('GET', url)
    let answer: HttpAnswer
    try {
      answer = await this.api.http.send('GET', url)
    } catch (e) {
      throw new TargetError(`${where}: cannot read charge ${id}: ${(e as Error).message}`, { cause: e })
    }
    if (answer.status === 404) return null
    const charge = answer.status === 200 ? chargeOf(answer.body) : null
    if (!charge) {
      throw new TargetError(`${where} answered ${answer.status} for charge ${id}; the premises cannot be checked now: ${serviceMessage(answer.body)}`)
    }
    return charge
  }

  private faultOf(answer: HttpAnswer, where: string): DispatchFault | null {
    const error = (answer.body as JsonObject | null)?.error as JsonObject | undefined
    const code = typeof error?.code === 'string' ? error.code : undefined
    const type = typeof error?.type === 'string' ? error.type : undefined
    const context = { status: answer.status, ...(code ? { code } : {}), ...(type ? { type } : {}) }
    if (answer.status === 409) {
      return new DispatchFault('retry-later', `${where} answered 409 (${code ?? 'conflict'}): the first request with this idempotency key is still running; retry with the same key`, {
        context,
      })
    }
    if (answer.status === 400 && type === 'idempotency_error') {
      return new DispatchFault('refused', `${where} refused the idempotency key (idempotency_error): ${serviceMessage(answer.body)}`, { context })
    }
    const fault = faultFromStatus(answer, this.tier, where, this.api.http.now())
    if (!fault) return null
    return new DispatchFault(fault.kind, fault.message, { context, retryAfterMs: fault.retryAfterMs })
  }
}

function receiptOf(body: JsonObject, refund: Refund): Receipt {
  return {
    refund: String(body.id),
    status: String(body.status ?? 'unknown'),
    charge: refund.charge,
    amount: refund.amount,
    amount_decimal: fromMinorUnits(refund.amount, refund.currency),
    currency: refund.currency,
  }
}
