/**
 * A webhook receiver as Stripe asks its users to write theirs
 * (https://docs.stripe.com/webhooks), for the `webhook` target and notices:
 *
 * - it checks the signature before acting on anything ("Verify webhook
 *   signatures manually", https://docs.stripe.com/webhooks#verify-manually):
 *   `Interlock-Signature` over the raw body, under the shared secret, within
 *   the tolerance (verifyWebhookSignature, the check a user's receiver runs).
 *   A bad or missing one is answered 400 and nothing is done; it is counted
 *   (`badSignatures`);
 * - it keeps the keys it has acted on and does not act twice ("Handle
 *   duplicate events", https://docs.stripe.com/webhooks#handle-duplicate-events):
 *   a repeated `Idempotency-Key` gets the first answer again (marked
 *   `Idempotent-Replayed: true`), one whose first delivery is still being
 *   handled 409, one with another body 422. A delivery without a key is 400.
 *
 * Every POST is kept in `deliveries`, replays and bad signatures included;
 * the ledger (`count(key)`) counts what was acted on, once per key at most.
 * Faults (`fault({ mode })`, emulator.ts) strike the acting: `5xx` and
 * `reset-before-apply` act on nothing and keep no key, so the delivery sent
 * again is acted on; `apply-then-drop` acts, keeps the key, loses the answer.
 */
import type http from 'node:http'
import { verifyWebhookSignature, SIGNATURE_HEADER } from '../core/targets/webhook/signature.js'
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface WebhookDelivery {
  /** The Idempotency-Key, when the delivery carried one. */
  key?: string
  /** The body as JSON, or as text when it is not JSON. */
  body: unknown
  headers: http.IncomingHttpHeaders
  /** Whether its signature verified under the receiver's secret. */
  verified: boolean
}

interface Kept {
  body: string
  /** Absent while the first delivery with the key is being handled. */
  answer?: EmulatorResponse
}

export class WebhookReceiver extends Emulator {
  readonly deliveries: WebhookDelivery[] = []
  badSignatures = 0
  private readonly keys = new Map<string, Kept>()
  private seq = 0

  constructor(
    readonly secret = 'whsec_emulator_secret_that_must_never_leak',
    private readonly toleranceSeconds = 300,
  ) {
    super()
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (req.method !== 'POST') return { status: 405, body: { error: 'webhooks are POSTed' } }
    const header = req.headers[SIGNATURE_HEADER.toLowerCase()]
    const verified = verifyWebhookSignature(this.secret, typeof header === 'string' ? header : undefined, req.body, { toleranceSeconds: this.toleranceSeconds })
    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined
    const delivery: WebhookDelivery = { ...(key === undefined ? {} : { key }), body: parsed(req.body), headers: req.headers, verified }
    this.deliveries.push(delivery)
    if (!verified) {
      this.badSignatures++
      return { status: 400, body: { error: `${SIGNATURE_HEADER} does not verify` } }
    }
    if (key === undefined) return { status: 400, body: { error: 'Idempotency-Key is required' } }
    const kept = this.keys.get(key)
    if (kept && kept.body !== req.body) return { status: 422, body: { error: 'this Idempotency-Key came before with another body' } }
    if (kept?.answer) return { ...kept.answer, headers: { ...kept.answer.headers, 'idempotent-replayed': 'true' } }
    if (kept) return { status: 409, body: { error: 'a delivery with this Idempotency-Key is still being handled' } }
    const mine: Kept = { body: req.body }
    this.keys.set(key, mine)
    try {
      return await this.apply(req, key, () => {
        mine.answer = { status: 200, body: { received: `wh_${++this.seq}` } }
        return mine.answer
      })
    } finally {
      // Not acted on (a fault struck first): the key is not kept, so the delivery sent again is acted on.
      if (!mine.answer) this.keys.delete(key)
    }
  }
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(body) as unknown
  } catch {
    return body
  }
}
