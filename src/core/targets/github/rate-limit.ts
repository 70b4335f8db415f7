/**
 * GitHub's rate limits, and how long each asks a client to wait, in the order
 * "Rate limits for the REST API" and "Troubleshooting the REST API" give:
 *
 * - `retry-after` present (a secondary limit, 403 or 429): that many seconds;
 * - `x-ratelimit-remaining: 0` (the primary limit, 403 or 429, with or without
 *   retry-after): until `x-ratelimit-reset` (UTC epoch seconds);
 * - otherwise a 429, or a 403 whose message says it exceeded a secondary rate
 *   limit: at least one minute.
 * "Continuing to make requests while you are rate limited may result in the
 * banning of your integration": a rate limit is never retried at once. The
 * gate waits in place only up to `[gate] max_wait_ms`; a longer wait returns
 * the effect to AUTHORIZED until then (src/core/returned.ts).
 *
 * A 403 that is none of these is a permission refusal, not a limit.
 *
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit
 * https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api#rate-limit-errors
 */
import { serviceMessage } from '../http/body.js'
import { parseRetryAfter } from '../http/faults.js'
import type { GithubAnswer } from './api.js'

/** "Otherwise, wait for at least one minute before retrying." */
export const UNSPECIFIED_WAIT_MS = 60_000
/** A reset the client's clock already sees as past (clock skew): still not an immediate retry. */
const MIN_WAIT_MS = 1_000

export interface RateLimitWait {
  which: 'primary rate limit' | 'secondary rate limit' | 'too many requests'
  waitMs: number
}

/** How long GitHub asks to wait, or undefined when the answer is not a rate limit. */
export function rateLimitWait(answer: GithubAnswer, nowMs: number): RateLimitWait | undefined {
  const { status, headers } = answer
  if (status !== 403 && status !== 429) return undefined
  const retryAfter = parseRetryAfter(answer.retryAfter, nowMs)
  const primary = headers['x-ratelimit-remaining']?.trim() === '0'
  const secondary = /secondary rate limit/i.test(serviceMessage(answer.body))
  const which = primary ? 'primary rate limit' : secondary || retryAfter !== undefined ? 'secondary rate limit' : status === 429 ? 'too many requests' : undefined
  if (!which) return undefined
  const untilReset = primary ? resetWait(headers['x-ratelimit-reset'], nowMs) : undefined
  return { which, waitMs: Math.max(MIN_WAIT_MS, retryAfter ?? untilReset ?? UNSPECIFIED_WAIT_MS) }
}

function resetWait(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined
  return Number(value.trim()) * 1000 - nowMs
}
