/**
 * What SendGrid's answers to a mail send mean, as DispatchFault kinds, from
 * its API reference:
 *
 * - 429: not taken; wait for Retry-After, else until X-RateLimit-Reset (a Unix
 *   time) (https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/rate-limits);
 * - 403 "Too many bad requests. Temporary block": not taken, and not a refusal
 *   of this message either; SendGrid blocks the caller for a while after a run
 *   of bad requests (https://www.twilio.com/docs/sendgrid/api-reference/how-to-use-the-sendgrid-v3-api/errors).
 *   It names no duration, so the wait is Retry-After when given, else
 *   TEMPORARY_BLOCK_WAIT_MS: longer than the gate waits in place by default,
 *   so the effect returns to AUTHORIZED until then (src/core/returned.ts)
 *   rather than failing, or sitting DISPATCHED until recovery calls it AMBIGUOUS;
 * - any other 403 (a from address that is no verified Sender Identity, a key
 *   without the mail.send scope) and other 4xx: refused, with SendGrid's message;
 * - 5xx: unknown (the generic HTTP rules, http/faults.ts).
 */
import type { DispatchFault } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import type { HttpAnswer } from '../http/client.js'
import { faultFromStatus, parseRetryAfter, retryLater } from '../http/faults.js'

/** SendGrid documents no length for a temporary block: a minute, then try again. */
export const TEMPORARY_BLOCK_WAIT_MS = 60_000

const TEMPORARY_BLOCK = /temporar(y|ily) block|too many bad requests/i

export function sendgridFault(answer: HttpAnswer, where: string, nowMs: number): DispatchFault | null {
  const said = serviceMessage(answer.body)
  if (answer.status === 403 && TEMPORARY_BLOCK.test(said)) {
    const waitMs = parseRetryAfter(answer.retryAfter, nowMs) ?? TEMPORARY_BLOCK_WAIT_MS
    return retryLater(where, answer, `${said}: a block for a while, not a refusal of this message`, waitMs)
  }
  const reset = Number(answer.headers['x-ratelimit-reset'])
  const retryAfter =
    answer.status === 429 && answer.retryAfter === undefined && Number.isFinite(reset) && reset > 0
      ? String(Math.max(0, Math.ceil(reset - nowMs / 1000)))
      : answer.retryAfter
  return faultFromStatus({ ...answer, retryAfter }, 3, where, nowMs)
}
