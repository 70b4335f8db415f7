/**
 * What `gate.submit` and recovery say happened to an effect. Every status but
 * `in_flight` is final for the caller; `in_flight` means the effect is durable
 * and recovery (or the process already working on it) will finish it.
 */
import type { JsonObject } from './canonical-json.js'
import type { EffectSnapshot, Receipt } from './effect.js'
import type { State } from './lifecycle.js'
import { isReturned } from './returned.js'

/**
 * How an effect came to be COMMITTED, as its COMMITTED record says: 'apply', a
 * send the target took; 'query', a tier-2 target found it had happened (after
 * a crash in flight); 'operator', an operator resolved it AMBIGUOUS → applied.
 */
export type CommittedBy = 'apply' | 'query' | 'operator'

/**
 * What the call that got this outcome did for a COMMITTED effect (`via`):
 * - 'apply': it was sent, and the target took it (by this process inline, or
 *   by a relay while the caller waited for it);
 * - 'query': it was found at the service by a tier-2 query (recovery of an
 *   effect caught in flight): it had landed, nothing was sent again;
 * - 'journal': it was COMMITTED before this call (a re-submission, a retry, a
 *   replay after a crash): the journal answered, nothing was sent, and
 *   `committedBy` says how it was committed then.
 */
export type CommittedVia = 'apply' | 'query' | 'journal'

export type SubmitOutcome =
  | { status: 'committed'; effectId: string; receipt: Receipt; via: 'apply' | 'query' }
  | { status: 'committed'; effectId: string; receipt: Receipt; via: 'journal'; committedBy: CommittedBy }
  | { status: 'rejected'; effectId: string; violations: string[] }
  /** `reason`: why the rule holds it, e.g. an amount that is not a number (held to be safe). */
  | { status: 'held'; effectId: string; rule: string; reason?: string }
  /** `answer`: what the service said with its refusal, when the target kept it (an MCP tool's error result). */
  | { status: 'failed'; effectId: string; reason: string; answer?: JsonObject }
  | { status: 'ambiguous'; effectId: string; reason: string }
  /**
   * `notBefore` (ISO time): the service asked to wait until then; nothing sends the
   * effect before it (returned.ts). A relay parks its lease until then.
   */
  | { status: 'in_flight'; effectId: string; state: State; reason?: string; notBefore?: string }

export type OutcomeStatus = SubmitOutcome['status']

/**
 * The outcome of an effect that stood where it stands before this call did
 * anything with it (journaled by an earlier run or by another process): a
 * COMMITTED one is answered by the journal, `via: 'journal'`.
 */
export function journalOutcome(s: EffectSnapshot): SubmitOutcome {
  const o = outcomeOf(s)
  if (o.status !== 'committed') return o
  return { status: 'committed', effectId: o.effectId, receipt: o.receipt, via: 'journal', committedBy: committedBy(s.detail?.via) }
}

/**
 * Whether the service's own record is what shows a COMMITTED effect happened
 * (a tier-2 query found it), now or when it was committed: its receipt is
 * then that record, not the result of a send.
 */
export function foundAtService(o: Extract<SubmitOutcome, { status: 'committed' }>): boolean {
  return o.via === 'query' || (o.via === 'journal' && o.committedBy === 'query')
}

/** The outcome a journaled effect stands at, as the record this call wrote (or waited for) says. */
export function outcomeOf(s: EffectSnapshot): SubmitOutcome {
  const effectId = s.effect.id
  const d: JsonObject = s.detail ?? {}
  switch (s.state) {
    case 'COMMITTED':
      return { status: 'committed', effectId, receipt: (d.receipt as Receipt) ?? {}, via: d.via === 'query' ? 'query' : 'apply' }
    case 'REJECTED':
      return { status: 'rejected', effectId, violations: Array.isArray(d.violations) ? d.violations.map(String) : [] }
    case 'FAILED': {
      const reason = String(d.reason ?? 'refused by the target')
      return isObject(d.answer) ? { status: 'failed', effectId, reason, answer: d.answer } : { status: 'failed', effectId, reason }
    }
    case 'AMBIGUOUS':
      return { status: 'ambiguous', effectId, reason: String(d.reason ?? 'outcome unknown') }
    case 'HELD':
      return typeof d.reason === 'string' ? { status: 'held', effectId, rule: String(d.rule ?? 'policy'), reason: d.reason } : { status: 'held', effectId, rule: String(d.rule ?? 'policy') }
    default:
      if (isReturned(s)) return returnedOutcome(effectId, String(d.returned), typeof d.notBefore === 'string' ? d.notBefore : undefined)
      return { status: 'in_flight', effectId, state: s.state }
  }
}

/** A returned effect (DISPATCHED → AUTHORIZED): in flight, with why and when it may go again. */
export function returnedOutcome(effectId: string, why: string, notBefore?: string): SubmitOutcome {
  const reason = `returned to AUTHORIZED: ${why}; ${notBefore ? `not sent again before ${notBefore}` : 'sent again once its premises are checked'}`
  return notBefore ? { status: 'in_flight', effectId, state: 'AUTHORIZED', reason, notBefore } : { status: 'in_flight', effectId, state: 'AUTHORIZED', reason }
}

function committedBy(via: unknown): CommittedBy {
  return via === 'query' || via === 'operator' ? via : 'apply'
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}
