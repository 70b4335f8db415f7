/**
 * What an apply's answer means, by the rules declared for the action
 * (committed, failed, retry_later, unknown, receipt, error) over the
 * built-in reading (faults.ts):
 *
 * - a status listed exactly wins over a class ("4xx") in another list;
 * - with `committed` declared, a 2xx it does not list is an unknown outcome
 *   (the service answered something it was not said to answer on success);
 * - an answer judged COMMITTED with a value at `error` is FAILED (GraphQL
 *   reports errors in a 200), and one without a value at `receipt` is an
 *   unknown outcome: the service did not say what it made.
 */
import type { JsonValue } from '../../canonical-json.js'
import type { HttpAnswerRules, StatusSpec } from '../../config/types-http.js'
import type { Receipt, Tier } from '../../effect.js'
import { DispatchFault } from '../../errors.js'
import { serviceMessage } from './body.js'
import type { HttpAnswer } from './client.js'
import { faultFromStatus, parseRetryAfter, retryLater } from './faults.js'
import { valueAt } from './pointer.js'

export type Outcome = 'committed' | 'failed' | 'retryLater' | 'unknown'

/** The outcome the rules give a status, or undefined when they do not say. */
export function declaredOutcome(status: number, rules: Partial<Record<Outcome, StatusSpec[]>>): Outcome | undefined {
  const outcomes: Outcome[] = ['committed', 'failed', 'retryLater', 'unknown']
  const exact = outcomes.find((o) => rules[o]?.includes(status))
  if (exact) return exact
  const cls = outcomes.find((o) => rules[o]?.includes(`${Math.floor(status / 100)}xx` as StatusSpec))
  if (cls) return cls
  if (rules.committed && status >= 200 && status < 300) return 'unknown'
  return undefined
}

/** The receipt of a COMMITTED answer; throws the DispatchFault for any other. */
export function judgeAnswer(answer: HttpAnswer, rules: HttpAnswerRules, tier: Tier, where: string, nowMs: number): Receipt {
  const outcome = declaredOutcome(answer.status, rules)
  const said = serviceMessage(answer.body)
  const context = { status: answer.status }
  if (outcome === undefined) {
    const fault = faultFromStatus(answer, tier, where, nowMs)
    if (fault) throw fault
  } else if (outcome === 'failed') {
    throw new DispatchFault('refused', `${where} refused (${answer.status}): ${said}`, { context })
  } else if (outcome === 'retryLater') {
    throw retryLater(where, answer, `not now: ${said}`, parseRetryAfter(answer.retryAfter, nowMs))
  } else if (outcome === 'unknown') {
    throw new DispatchFault('unknown', `${where} answered ${answer.status}; the service may or may not have acted: ${said}`, { context })
  }
  return receiptOf(answer, rules, where)
}

function receiptOf(answer: HttpAnswer, rules: Pick<HttpAnswerRules, 'error' | 'receipt'>, where: string): Receipt {
  if (rules.error !== undefined) {
    const err = present(valueAt(answer.body, rules.error))
    if (err !== undefined) {
      throw new DispatchFault('refused', `${where} answered ${answer.status} with an error at ${rules.error}: ${typeof err === 'string' ? err : JSON.stringify(err)}`, {
        context: { status: answer.status },
      })
    }
  }
  if (rules.receipt === undefined) return { status: answer.status, body: answer.body }
  const id = present(valueAt(answer.body, rules.receipt))
  if (id === undefined) {
    throw new DispatchFault('unknown', `${where} answered ${answer.status} without ${rules.receipt} in its body: it did not say what it made`, {
      context: { status: answer.status },
    })
  }
  return { status: answer.status, id, body: answer.body }
}

/** A found answer's receipt: `id` from the query's pointer when it has one. */
export function foundReceipt(answer: HttpAnswer, receipt: string | undefined): Receipt {
  const id = receipt === undefined ? undefined : present(valueAt(answer.body, receipt))
  return id === undefined ? { status: answer.status, body: answer.body } : { status: answer.status, id, body: answer.body }
}

/** null counts as absent: GraphQL nulls a field that failed, JSON APIs null what they have not got. */
export function present(v: JsonValue | undefined): JsonValue | undefined {
  return v === null ? undefined : v
}
