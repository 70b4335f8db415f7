/**
 * Stripe, as far as the refund target relies on it, from Stripe's own
 * documentation:
 *
 * - Idempotent requests (https://docs.stripe.com/api/idempotent_requests,
 *   https://docs.stripe.com/idempotency): the status and body of the first
 *   request with a key are saved once the endpoint starts executing, and a
 *   retry with the same key gets them back (marked `Idempotent-Replayed: true`)
 *   instead of a second refund: "Subsequent requests with the same key return
 *   the same result, including 500 errors." A 500 injected into a refund
 *   (fault modes `5xx`, and `apply-then-5xx` for one that happened anyway) is
 *   an `api_error` saved like any answer and replayed on every retry; another
 *   5xx is a failure in front of the API and saves nothing. The same key
 *   with different parameters is a 400 `idempotency_error`; a request whose
 *   parameters fail validation, or that collides with a request still running
 *   with the same key (409 `idempotency_key_in_use`), saves nothing.
 * - `Stripe-Should-Retry`: `false` on a saved 500, whose replay is all a retry
 *   gets ("we expect the stripe-should-retry header to be false in most cases
 *   when a 500 is returned, since our idempotency framework would typically
 *   replay it anyway", stripe-node's RequestSender); `true` on a 429
 *   `lock_timeout` (`lockTimeoutNext()`), which saves nothing
 *   (https://docs.stripe.com/rate-limits, object lock timeouts;
 *   https://docs.stripe.com/error-low-level).
 * - Keys are kept 24 hours by the emulator's `clock`: "You can remove keys
 *   from the system automatically after they're at least 24 hours old. We
 *   generate a new request if a key is reused after the original is pruned."
 *   `pruneKeys()` forgets them all at once.
 * - Refund status (https://docs.stripe.com/api/refunds/object): `pending`,
 *   `requires_action`, `succeeded`, `failed` (with `failure_reason`) or
 *   `canceled`. New refunds take `refundStatus` (default `succeeded`);
 *   `failRefund()` is a pending refund the bank could not process, its amount
 *   back on the charge (https://docs.stripe.com/refunds#failed-refunds).
 *   Retrieve a refund: `GET /v1/refunds/{id}` (https://docs.stripe.com/api/refunds/retrieve).
 * - Refunds (https://docs.stripe.com/api/refunds/create): form-encoded
 *   `charge`, `amount` (minor units; the rest of the charge when absent),
 *   `reason`, `metadata[...]`; refusing more than is left to refund
 *   (`charge_already_refunded`, `amount_too_large`) and disputed charges
 *   (`charge_disputed`) (https://docs.stripe.com/error-codes).
 * - List refunds (https://docs.stripe.com/api/refunds/list): `charge`,
 *   `limit`, `starting_after`; newest first; `{ object: "list", data, has_more }`.
 * - Charges (https://docs.stripe.com/api/charges/object): `amount`,
 *   `amount_refunded`, `refunded`, `disputed`, `status`, `currency`, in minor
 *   units (https://docs.stripe.com/currencies).
 *
 * The ledger counts refunds per Idempotency-Key, which the target sets to the
 * effect id; replays do not count, as they change nothing at Stripe.
 */
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface StripeCharge {
  id: string
  object: 'charge'
  amount: number
  amount_refunded: number
  currency: string
  status: 'succeeded' | 'pending' | 'failed'
  refunded: boolean
  disputed: boolean
}

export type RefundStatus = 'pending' | 'requires_action' | 'succeeded' | 'failed' | 'canceled'

export interface StripeRefund {
  id: string
  object: 'refund'
  amount: number
  charge: string
  currency: string
  status: RefundStatus
  /** Set when the refund failed: lost_or_stolen_card, expired_or_canceled_card, charge_for_pending_refund_disputed, insufficient_funds, declined, merchant_request or unknown. */
  failure_reason?: string
  reason: string | null
  metadata: Record<string, string>
}

interface Saved {
  params: string
  status: number
  body: unknown
  headers: Record<string, string>
  /** The emulator's clock when it was saved. */
  at: number
}

/** How long a key is kept: "at least 24 hours old" before it may be pruned. */
export const KEY_LIFETIME_MS = 24 * 60 * 60 * 1000

export class StripeEmulator extends Emulator {
  readonly charges = new Map<string, StripeCharge>()
  readonly refunds: StripeRefund[] = []
  /** Idempotency keys Stripe has an answer saved for. */
  private readonly saved = new Map<string, Saved>()
  /** Keys whose first request is executing right now. */
  private readonly running = new Set<string>()
  private delays: number[] = []
  private lockTimeouts = 0
  private seq = 0
  /** The emulator's clock, for the age of idempotency keys. */
  clock: () => number = Date.now
  /** The status new refunds are created with (a card refund `succeeded` at once; a bank refund `pending`). */
  refundStatus: RefundStatus = 'succeeded'

  constructor(readonly apiKey = 'sk_test_emulator_4eC39HqLyjWDarjtT1zdp7dc') {
    super()
  }

  seedCharge(charge: Pick<StripeCharge, 'id' | 'amount' | 'currency'> & Partial<StripeCharge>): StripeCharge {
    const c: StripeCharge = { object: 'charge', amount_refunded: 0, status: 'succeeded', refunded: false, disputed: false, ...charge }
    this.charges.set(c.id, c)
    return c
  }

  /** The world moving on between the agent's decision and the dispatch. */
  updateCharge(id: string, patch: Partial<StripeCharge>): void {
    Object.assign(this.charges.get(id)!, patch)
  }

  /** The next refund request takes this long to execute, holding its key in flight; it finishes even if the client leaves. */
  delayNext(ms: number): void {
    this.delays.push(ms)
  }

  /** Stripe forgetting every idempotency key, as it may once they are 24 hours old. */
  pruneKeys(): void {
    this.saved.clear()
  }

  /** The next refund request meets an object lock held elsewhere: 429 lock_timeout, Stripe-Should-Retry: true. */
  lockTimeoutNext(): void {
    this.lockTimeouts++
  }

  /** A pending refund the customer's bank could not process: failed, with Stripe's reason, its amount back on the charge. */
  failRefund(id: string, failureReason = 'expired_or_canceled_card'): void {
    const r = this.refunds.find((x) => x.id === id)
    if (!r) throw new Error(`no refund ${id}`)
    r.status = 'failed'
    r.failure_reason = failureReason
    const c = this.charges.get(r.charge)
    if (c) {
      c.amount_refunded -= r.amount
      c.refunded = c.amount_refunded >= c.amount
    }
  }

  /** A pending refund that went through. */
  settleRefund(id: string): void {
    const r = this.refunds.find((x) => x.id === id)
    if (!r) throw new Error(`no refund ${id}`)
    r.status = 'succeeded'
  }

  refundsFor(effectId: string): StripeRefund[] {
    return this.refunds.filter((r) => r.metadata.interlock_effect_id === effectId)
  }

  /**
   * A server error. A 500 comes from inside the refund endpoint, as Stripe
   * words it: an `api_error`, saved for the key like any answer once the
   * endpoint began, so every retry with the key gets it again, and marked
   * `Stripe-Should-Retry: false` since a retry can only replay it. Any other
   * 5xx (502, 503, 504) stands for a failure in front of the API, before the
   * endpoint ran: "We save results only after the execution of an endpoint
   * begins", so nothing is saved and a retry runs the request.
   */
  protected override injectedError(req: EmulatorRequest, status: number): EmulatorResponse {
    if (status !== 500) return { status, body: { error: { type: 'api_error', message: `The server answered ${status}; try again.` } } }
    const answer: EmulatorResponse = {
      ...error(status, 'api_error', undefined, 'An unknown error occurred while processing your request.'),
      headers: { 'stripe-should-retry': 'false' },
    }
    const key = req.headers['idempotency-key']
    if (req.method === 'POST' && req.path === '/v1/refunds' && typeof key === 'string') {
      this.saved.set(key, { params: paramsOf(req.body), status, body: answer.body, headers: answer.headers!, at: this.clock() })
    }
    return answer
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      const given = String(req.headers.authorization ?? '').replace(/^Bearer /, '')
      // Stripe masks all but the last four characters of a wrong key.
      return error(401, 'invalid_request_error', undefined, `Invalid API Key provided: ${given.slice(0, 8)}${'*'.repeat(Math.max(0, given.length - 12))}${given.slice(-4)}`)
    }
    // `interlock check`'s probe: Retrieve balance, read-only (https://docs.stripe.com/api/balance/balance_retrieve).
    if (req.method === 'GET' && req.path === '/v1/balance') {
      const funds = [{ amount: 0, currency: 'usd', source_types: { card: 0 } }]
      return { status: 200, body: { object: 'balance', available: funds, pending: funds, livemode: false } }
    }
    const charge = /^\/v1\/charges\/([^/]+)$/.exec(req.path)
    if (req.method === 'GET' && charge) {
      const c = this.charges.get(decodeURIComponent(charge[1]!))
      return c ? { status: 200, body: c } : noSuchCharge(decodeURIComponent(charge[1]!))
    }
    if (req.method === 'POST' && req.path === '/v1/refunds') return this.refund(req)
    if (req.method === 'GET' && req.path === '/v1/refunds') return this.list(req.query)
    const one = /^\/v1\/refunds\/([^/]+)$/.exec(req.path)
    if (req.method === 'GET' && one) {
      const id = decodeURIComponent(one[1]!)
      const r = this.refunds.find((x) => x.id === id)
      return r ? { status: 200, body: r } : error(404, 'invalid_request_error', 'resource_missing', `No such refund: '${id}'`, 'id')
    }
    return error(404, 'invalid_request_error', undefined, `Unrecognized request URL (${req.method}: ${req.path})`)
  }

  private list(query: URLSearchParams): EmulatorResponse {
    const limit = Math.min(100, Number(query.get('limit') ?? 10))
    const charge = query.get('charge')
    let all = this.refunds.filter((r) => !charge || r.charge === charge).reverse()
    const after = query.get('starting_after')
    if (after) all = all.slice(all.findIndex((r) => r.id === after) + 1)
    return { status: 200, body: { object: 'list', url: '/v1/refunds', data: all.slice(0, limit), has_more: all.length > limit } }
  }

  private async refund(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (!String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      return error(400, 'invalid_request_error', 'parameter_invalid', 'Expected a form-encoded body (application/x-www-form-urlencoded)')
    }
    const form = new URLSearchParams(req.body)
    const params = paramsOf(req.body)
    const key = req.headers['idempotency-key'] as string | undefined
    if (this.lockTimeouts > 0) {
      // Object locks are taken before the idempotency layer saves anything.
      this.lockTimeouts--
      const locked = error(429, 'invalid_request_error', 'lock_timeout', 'This object cannot be accessed right now because another API request or Stripe process is currently accessing it. If you see this error intermittently, retry the request.')
      return { ...locked, headers: { 'stripe-should-retry': 'true' } }
    }

    if (key !== undefined) {
      const kept = this.saved.get(key)
      if (kept && this.clock() - kept.at >= KEY_LIFETIME_MS) this.saved.delete(key)
      const saved = this.saved.get(key)
      if (saved && saved.params !== params) {
        return error(
          400,
          'idempotency_error',
          undefined,
          `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
        )
      }
      if (saved) return { status: saved.status, body: saved.body, headers: { ...saved.headers, 'idempotent-replayed': 'true' } }
      if (this.running.has(key)) {
        return error(409, 'invalid_request_error', 'idempotency_key_in_use', 'There is currently another in-progress request using this Idempotency-Key. Please try again later.')
      }
    }

    // Parameters that fail validation save nothing under the key.
    const chargeId = form.get('charge')
    if (!chargeId) return error(400, 'invalid_request_error', 'parameter_missing', 'Missing required param: charge.', 'charge')
    const amountText = form.get('amount')
    if (amountText !== null && !/^[1-9]\d*$/.test(amountText)) {
      return error(400, 'invalid_request_error', 'parameter_invalid_integer', 'Invalid positive integer', 'amount')
    }
    const reason = form.get('reason')
    if (reason !== null && !['duplicate', 'fraudulent', 'requested_by_customer'].includes(reason)) {
      return error(400, 'invalid_request_error', 'parameter_invalid', `Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer`, 'reason')
    }

    if (key !== undefined) this.running.add(key)
    try {
      const delay = this.delays.shift()
      if (delay) await new Promise((r) => setTimeout(r, delay))
      const save = (answer: EmulatorResponse): EmulatorResponse => {
        if (key !== undefined) this.saved.set(key, { params, status: answer.status, body: answer.body, headers: answer.headers ?? {}, at: this.clock() })
        return answer
      }
      const c = this.charges.get(chargeId)
      if (!c) return save(noSuchCharge(chargeId))
      const left = c.amount - c.amount_refunded
      const amount = amountText === null ? left : Number(amountText)
      if (c.disputed) return save(error(400, 'invalid_request_error', 'charge_disputed', `Charge ${c.id} has been charged back; cannot issue a refund.`))
      if (left <= 0) return save(error(400, 'invalid_request_error', 'charge_already_refunded', `Charge ${c.id} has already been refunded.`))
      if (amount > left) {
        return save(error(400, 'invalid_request_error', 'amount_too_large', `Refund amount (${amount}) is greater than unrefunded amount on charge (${left})`, 'amount'))
      }
      return await this.apply(req, key, () => {
        const metadata: Record<string, string> = {}
        for (const [k, v] of form) {
          const m = /^metadata\[(.+)\]$/.exec(k)
          if (m) metadata[m[1]!] = v
        }
        const refund: StripeRefund = {
          id: `re_emu${String(++this.seq).padStart(6, '0')}`,
          object: 'refund',
          amount,
          charge: c.id,
          currency: c.currency,
          status: this.refundStatus,
          reason,
          metadata,
        }
        this.refunds.push(refund)
        c.amount_refunded += amount
        c.refunded = c.amount_refunded >= c.amount
        return save({ status: 200, body: refund })
      })
    } finally {
      if (key !== undefined) this.running.delete(key)
    }
  }
}

/** The form's parameters in one canonical order: what a retried key is compared with. */
function paramsOf(body: string): string {
  return [...new URLSearchParams(body).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join('&')
}

function error(status: number, type: string, code: string | undefined, message: string, param?: string): EmulatorResponse {
  return { status, body: { error: { type, message, ...(code ? { code } : {}), ...(param ? { param } : {}) } } }
}

function noSuchCharge(id: string): EmulatorResponse {
  return error(404, 'invalid_request_error', 'resource_missing', `No such charge: '${id}'`, 'id')
}
