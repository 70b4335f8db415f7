/**
 * What a Slack Web API answer means for the effect. Slack answers most errors
 * with HTTP 200 and `{ "ok": false, "error": "<code>" }`
 * (https://docs.slack.dev/apis/web-api/#responses), so the HTTP status alone
 * says little:
 * - HTTP 429 with Retry-After (seconds), or `error: "ratelimited"`: not done,
 *   retry later (https://docs.slack.dev/apis/web-api/rate-limits);
 * - `internal_error`, `fatal_error`, `service_unavailable`: Slack documents
 *   that "some aspect of the operation" may have succeeded → unknown;
 * - any other error code (channel_not_found, not_in_channel, invalid_auth,
 *   is_archived, message_not_found, ...): refused, naming the code;
 * - other HTTP statuses: faults.ts (5xx unknown, 4xx refused).
 */
import type { JsonObject } from '../../canonical-json.js'
import { DispatchFault } from '../../errors.js'
import type { HttpAnswer } from '../http/client.js'
import { faultFromStatus, parseRetryAfter } from '../http/faults.js'

const RATE_LIMITED = new Set(['ratelimited', 'rate_limited'])
const MAYBE_DONE = new Set(['internal_error', 'fatal_error', 'service_unavailable'])

/** The fault an answer carries, or the `ok: true` body. */
export function slackAnswer(answer: HttpAnswer, where: string, nowMs: number): { fault: DispatchFault } | { body: JsonObject } {
  // Slack posts are tier 3: a 409 has no idempotency meaning here.
  const byStatus = faultFromStatus(answer, 3, where, nowMs)
  if (byStatus) return { fault: byStatus }
  const body = answer.body
  if (body === null || typeof body !== 'object' || Array.isArray(body) || typeof body.ok !== 'boolean') {
    return { fault: new DispatchFault('unknown', `${where} answered ${answer.status} without a Slack API answer`, { context: { status: answer.status } }) }
  }
  if (body.ok) return { body }
  const code = typeof body.error === 'string' ? body.error : 'unknown_error'
  const context = { status: answer.status, error: code }
  if (RATE_LIMITED.has(code)) {
    const retryAfterMs = parseRetryAfter(answer.retryAfter, nowMs)
    return { fault: new DispatchFault('retry-later', `${where}: Slack is rate limiting (${code}); retry later`, { context, retryAfterMs }) }
  }
  if (MAYBE_DONE.has(code)) {
    return { fault: new DispatchFault('unknown', `${where}: Slack answered ${code}; part of the call may have been done`, { context }) }
  }
  return { fault: new DispatchFault('refused', `${where}: Slack refused: ${code}`, { context }) }
}
