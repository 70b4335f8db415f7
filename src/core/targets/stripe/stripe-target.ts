/**
 * Stripe refunds, tier 1: `POST /v1/refunds` with `Idempotency-Key: <effect id>`.
 *
 * Stripe saves the answer to the first request with a key and answers every
 * retry with it, so the gate resends with the same key after a crash or an
 * unknown outcome and the refund happens once
 * (https://docs.stripe.com/api/idempotent_requests). What each answer means,
 * `Stripe-Should-Retry` included: answers.ts.
 *
 * A saved server error ("Retries with the same key return the saved response,
 * including 500 errors") cannot be retried away: for as long as Stripe keeps
 * the key, every retry gets the same 500. It is settled by the refund lookup
 * (refund-lookup.ts): a refund carrying the effect id → COMMITTED; none →
 * AMBIGUOUS (a DispatchFault 'unknowable'), since Stripe calls the outcome of
 * a 500 indeterminate (https://docs.stripe.com/error-low-level#server-errors)
 * and only a person looking at the charge can say more; never a new POST.
 *
 * Recovery first looks for a refund carrying the effect id in its metadata
 * (refund-lookup.ts): Stripe may prune a key after 24 hours, and recovery may
 * come later than that. Any re-apply more than a day after the effect was
 * dispatched (key-age.ts) looks first too, and when no refund is found it is
 * never sent with the old key: the effect starts over ('not-applied'), its
 * premises checked again before a new POST.
 *
 * The receipt keeps the refund's status as Stripe answered it: `pending` is
 * not `succeeded` (later-outcome.ts); a refund answered `failed` or
 * `canceled` is FAILED.
 *
 * Premises: the charge, read with `GET /v1/charges/{id}` (charge-premises.ts).
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault, InputError, TargetError } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { HttpAnswer, HttpClientOptions } from '../http/client.js'
import { bearerService, type ServiceClient, type ServiceSettings } from '../http/service.js'
import type { ApplyContext, EffectTarget, LaterOutcome, ProbeResult } from '../target.js'
import { readRefundAnswer } from './answers.js'
import { chargeOf, chargePremises, checkCharge, type Charge } from './charge-premises.js'
import { fromMinorUnits } from './money.js'
import { parseRefund, refundForm, type Refund } from './refund-args.js'
import { ageText, keyMayBePruned } from './key-age.js'
import { refundNow } from './later-outcome.js'
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
    const pruned = keyMayBePruned(ctx, this.api.http.now())
    if (ctx.recovering || pruned) {
      const found = await findRefund(this.api, refund.charge, effect.id)
      if (found) return { ...receiptOf(found, refund), found: true }
      if (pruned) this.startOver(refund, ctx, found)
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
    const read = readRefundAnswer(answer, where, this.api.http.now())
    if (read.kind === 'fault') throw read.fault
    if (read.kind === 'saved-error') return this.settleSaved(effect, refund, where, read.status, read.said)
    const receipt = receiptOf(read.body, refund)
    if (answer.headers['idempotent-replayed'] === 'true') receipt.replayed = true
    if (receipt.status === 'failed' || receipt.status === 'canceled') {
      const reason = typeof read.body.failure_reason === 'string' ? ` (failure_reason: ${read.body.failure_reason})` : ''
      throw new DispatchFault('refused', `${where}: Stripe made refund ${receipt.refund}, and it is ${receipt.status}${reason}: no money went back`, { context: { status: answer.status } })
    }
    return receipt
  }

  /** A COMMITTED refund answered `pending` (or `requires_action`): its status now (later-outcome.ts). */
  laterOutcome(_effect: Effect, receipt: Receipt): Promise<LaterOutcome | null> {
    return refundNow(this.api, receipt)
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

  /**
   * A re-apply whose key Stripe may have pruned (key-age.ts) and whose refund
   * the lookup did not find: sending it would be a new refund on day-old
   * premises, so the effect starts over ('not-applied': back to AUTHORIZED,
   * premises checked again, then sent afresh). A lookup that could not be made
   * sends nothing either.
   */
  private startOver(refund: Refund, ctx: ApplyContext, found: null | undefined): never {
    const now = this.api.http.now()
    const key = `the idempotency key is ${ageText(ctx, now)}, and Stripe may prune a key once it is 24 hours old, so sending it again could be a second refund`
    if (found === undefined) {
      throw new DispatchFault('not-sent', `target ${this.name}: ${key}, and the refund lookup for charge ${refund.charge} could not be made; nothing was sent`)
    }
    throw new DispatchFault('not-applied', `target ${this.name}: no refund of charge ${refund.charge} carries this effect's id; ${key}: the premises are checked again before it is sent afresh`)
  }

  /** A server error Stripe keeps for the key (answers.ts): the lookup settles it, never a new POST. */
  private async settleSaved(effect: Effect, refund: Refund, where: string, status: number, said: string): Promise<Receipt> {
    const found = await findRefund(this.api, refund.charge, effect.id)
    if (found) return { ...receiptOf(found, refund), found: true }
    const why = `${where} answered ${status}, and Stripe keeps that answer for the idempotency key: every retry with it gets the same ${status} (${said})`
    if (found === undefined) {
      // Asked again on the next try: the same key fetches the same answer, and the lookup is tried again.
      throw new DispatchFault('unknown', `${why}; the refund lookup could not be made`, { context: { status } })
    }
    throw new DispatchFault(
      'unknowable',
      `${why}; no refund of charge ${refund.charge} carries this effect's id. Stripe calls a server error's outcome indeterminate: look at charge ${refund.charge} in the Stripe Dashboard, then resolve the effect as failed if no refund was made (a new decision takes a new key) or committed if one was`,
      { context: { status } },
    )
  }
}

/** The refund as Stripe answered it; `status` is kept as is: `pending` is not `succeeded`. */
function receiptOf(body: JsonObject, refund: Refund): Receipt {
  const receipt: Receipt = {
    refund: String(body.id),
    status: String(body.status ?? 'unknown'),
    charge: refund.charge,
    amount: refund.amount,
    amount_decimal: fromMinorUnits(refund.amount, refund.currency),
    currency: refund.currency,
  }
  if (typeof body.pending_reason === 'string') receipt.pending_reason = body.pending_reason
  return receipt
}
