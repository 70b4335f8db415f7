/**
 * What GitHub's answers to the target's writes mean, as DispatchFault kinds,
 * each with GitHub's own message:
 *
 * - merge 405 "Pull Request is not mergeable" → 'refused' (FAILED): GitHub did nothing;
 * - merge 409 "Head branch was modified. Review and try the merge again." → 'premise'
 *   (REJECTED): the `sha` we pushed down no longer matches the head;
 * - ref update 422 "Update is not a fast forward" → 'premise': the base branch moved
 *   after the revert was decided;
 * - 403 or 429 with Retry-After (secondary rate limits) → 'retry-later';
 * - anything else as the generic HTTP rules say (faults.ts): other 4xx refused, 5xx unknown.
 *
 * https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request (405, 409)
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api (403/429, retry-after)
 */
import { DispatchFault } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import { faultFromStatus, parseRetryAfter } from '../http/faults.js'
import type { GithubAnswer } from './api.js'

/** The request being answered: the merge, or one step of a revert (reads included: their faults decide a retry too). */
export type GithubCall = 'merge' | 'read' | 'create-commit' | 'update-ref'

export function githubFault(answer: GithubAnswer, call: GithubCall, where: string, nowMs: number): DispatchFault | null {
  const { status } = answer
  if (status >= 200 && status < 300) return null
  const said = serviceMessage(answer.body)
  const context = { status }
  if (call === 'merge' && status === 405) return new DispatchFault('refused', `${where} refused the merge (405): ${said}`, { context })
  if (call === 'merge' && status === 409) {
    return new DispatchFault('premise', `${where} refused the merge (409): ${said}`, {
      context,
      hint: 'The pull request head is no longer the commit the decision was made on; capture it again and decide again.',
    })
  }
  if (call === 'update-ref' && status === 422 && /fast.?forward/i.test(said)) {
    return new DispatchFault('premise', `${where}: the base branch moved since the revert was decided (422): ${said}`, { context })
  }
  if ((status === 403 || status === 429) && answer.retryAfter !== undefined) {
    const retryAfterMs = parseRetryAfter(answer.retryAfter, nowMs)
    return new DispatchFault('retry-later', `${where} is rate limited (${status}): ${said}`, { context, retryAfterMs })
  }
  return faultFromStatus(answer, 2, where, nowMs)
}
