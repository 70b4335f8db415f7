/**
 * Stripe, as far as the refund target relies on it, from Stripe's own
 * documentation:
 *
 * - Idempotent requests (https://docs.stripe.com/api/idempotent_requests,
 *   https://docs.stripe.com/idempotency): the status and body of the first
 *   request with a key are saved once the endpoint starts executing, and a
 *   retry with the same key gets them back (marked `Idempotent-Replayed: true`)
 *   instead of a second refund; the same key with different parameters is a
 *   400 `idempotency_error`; a request whose parameters fail validation, or
 *   that collides with a request still running with the same key (409
 *   `idempotency_key_in_use`), saves nothing.
 * - Refunds (https://docs.stripe.com/api/refunds/create): form-encoded
 *   `charge`, `amount` (minor units; the rest of the charge when absent),
 *   `reason`, `metadata[...]`; refusing more than is left to refund
 *   (`charge_already_refunded`, `amount_too_large`) and disputed charges
 *   (`charge_disputed`) (https://docs.stripe.com/error-codes).
 * - Keys "can be removed from the system automatically after they're at least
 *   24 hours old", and a key reused after that is a new request (`pruneKeys()`).
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

export interface StripeRefund {
  id: string
  object: 'refund'
  amount: number
  charge: string
  currency: string
  status: 'succeeded'
  reason: string | null
  metadata: Record<string, string>
}

interface Saved {
  params: string
  status: number
  body: unknown
}

export class StripeEmulator extends Emulator {
  readonly charges = new Map<string, StripeCharge>()
  readonly refunds: StripeRefund[] = []
  /** Idempotency keys Stripe has an answer saved for. */
  private readonly saved = new Map<string, Saved>()
  /** Keys whose first request is executing right now. */
  private readonly running = new Set<string>()
  private delays: number[] = []
  private seq = 0

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

  refundsFor(effectId: string): StripeRefund[] {
    return this.refunds.filter((r) => r.metadata.interlock_effect_id === effectId)
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
    const params = [...form.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join('&')
    const key = req.headers['idempotency-key'] as string | undefined

    if (key !== undefined) {
      const saved = this.saved.get(key)
      if (saved && saved.params !== params) {
        return error(
          400,
          'idempotency_error',
          undefined,
          `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
        )
      }
      if (saved) return { status: saved.status, body: saved.body, headers: { 'idempotent-replayed': 'true' } }
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
        if (key !== undefined) this.saved.set(key, { params, status: answer.status, body: answer.body })
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
          status: 'succeeded',
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

function error(status: number, type: string, code: string | undefined, message: string, param?: string): EmulatorResponse {
  return { status, body: { error: { type, message, ...(code ? { code } : {}), ...(param ? { param } : {}) } } }
}

function noSuchCharge(id: string): EmulatorResponse {
  return error(404, 'invalid_request_error', 'resource_missing', `No such charge: '${id}'`, 'id')
}
