/**
 * How a webhook's body is signed, as Stripe signs its webhooks
 * (https://docs.stripe.com/webhooks#verify-manually): the header
 * `Interlock-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`
 * under the shared secret. The timestamp is signed with the body, so a
 * captured request replayed later fails the receiver's tolerance check.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

export const SIGNATURE_HEADER = 'Interlock-Signature'

export function signWebhook(secret: string, body: string, nowMs: number): string {
  const t = Math.floor(nowMs / 1000)
  return `t=${t},v1=${hmac(secret, t, body)}`
}

/**
 * For receivers: true when `header` signs `body` (the raw bytes as received)
 * under `secret` within `toleranceSeconds` of now (default 300, as Stripe's libraries).
 */
export function verifyWebhookSignature(secret: string, header: string | undefined, body: string, options: { toleranceSeconds?: number; nowMs?: number } = {}): boolean {
  if (!header) return false
  const parts = new Map(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]))
  const t = Number(parts.get('t'))
  const given = parts.get('v1')
  if (!Number.isInteger(t) || !given || !/^[0-9a-f]{64}$/.test(given)) return false
  const now = Math.floor((options.nowMs ?? Date.now()) / 1000)
  if (Math.abs(now - t) > (options.toleranceSeconds ?? 300)) return false
  return timingSafeEqual(Buffer.from(hmac(secret, t, body), 'hex'), Buffer.from(given, 'hex'))
}

function hmac(secret: string, t: number, body: string): string {
  return createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')
}
