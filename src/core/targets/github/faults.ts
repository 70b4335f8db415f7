/**
 * What GitHub's answers to the target's writes mean, as DispatchFault kinds,
 * each with GitHub's own message:
 *
 * - merge 405 "Base branch was modified. Review and try the merge again." → 'retry-later':
 *   a push landed on the base while GitHub computed the merge; nothing was merged, and
 *   GitHub's answer says to try again (the premise pushed down, the head `sha`, still holds);
 * - merge 405 for any other reason ("Pull Request is not mergeable", a merge method the
 *   repository does not allow) → 'refused' (FAILED): GitHub did nothing, and trying again
 *   changes nothing;
 * - merge 409 "Head branch was modified. Review and try the merge again." → 'premise'
 *   (REJECTED): the `sha` we pushed down no longer matches the head;
 * - ref update 422 "Update is not a fast forward" → 'premise': the base branch moved
 *   after the revert was decided;
 * - a rate limit → 'retry-later' with the wait GitHub asks for (rate-limit.ts), never a
 *   refusal and never an immediate retry;
 * - anything else as the generic HTTP rules say (faults.ts): other 4xx refused, 5xx unknown.
 *
 * https://docs.github.com/en/rest/pulls/pulls#merge-a-pull-request (405, 409)
 * https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api (403/429)
 */
import { DispatchFault } from '../../errors.js'
import { serviceMessage } from '../http/body.js'
import { faultFromStatus } from '../http/faults.js'
import type { GithubAnswer } from './api.js'
import { rateLimitWait } from './rate-limit.js'

/** The request being answered: the merge, or one step of a revert (reads included: their faults decide a retry too). */
export type GithubCall = 'merge' | 'read' | 'create-commit' | 'update-ref'

const BASE_MOVED = /base branch was modified/i

export function githubFault(answer: GithubAnswer, call: GithubCall, where: string, nowMs: number): DispatchFault | null {
  const { status } = answer
  if (status >= 200 && status < 300) return null
  const said = serviceMessage(answer.body)
  const context = { status }
  const limited = rateLimitWait(answer, nowMs)
  if (limited) {
    return new DispatchFault('retry-later', `${where} is rate limited (${status}, ${limited.which}): ${said}`, { context, retryAfterMs: limited.waitMs })
  }
  if (call === 'merge' && status === 405 && BASE_MOVED.test(said)) {
    return new DispatchFault('retry-later', `${where} did not merge: the base branch moved during the merge (405): ${said}`, { context })
  }
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
  return faultFromStatus(answer, 2, where, nowMs)
}
