/**
 * What a relay checks before it works on a claimed effect, from the effect's
 * verified journal, never from its mutable row (docs/design.md, "The trust boundary"):
 *
 * 1. The row agrees with its journal: args, premises, target, action, key,
 *    thread and tier with the PROPOSED record; state and last seq with the
 *    last record. A row that disagrees was edited behind the journal.
 * 2. An effect that has been authorized was authorized by the side that may.
 *    Its authorization is its last AUTHORIZED record that follows PROPOSED or
 *    HELD (one that follows DISPATCHED is a return, resting on it):
 *    - from HELD: the journaled releases form a quorum, judged exactly as
 *      recovery judges a stranded release (outbox/recorded-quorum.ts):
 *      distinct operators trusted by this relay's config, signatures over the
 *      digest of the journaled effect, unexpired when the quorum formed, no
 *      nonce used twice. Releases a forged AUTHORIZED record carries count
 *      for nothing: only the HELD records each operator's release journaled.
 *    - straight from PROPOSED: the policy in force would not hold it. One it
 *      would hold was never released (releases are journaled on HELD records
 *      only).
 *    Either way, one the policy in force lets through stands (a relay would
 *    authorize it today). One it holds does not: the refusal says which rule
 *    (`hold`), and the relay holds the effect again (AUTHORIZED → HELD) for
 *    operators to release or deny, instead of leaving it stuck.
 *
 * On success the relay goes on with the snapshot rebuilt from the journal, so
 * what it sends is the PROPOSED record's args and premises, the ones the
 * releases signed. Pure: history, policy and operators come in as arguments.
 */
import type { JsonObject } from '../canonical-json.js'
import type { OperatorConfig } from '../config/types.js'
import type { EffectSnapshot } from '../effect.js'
import type { Hold, Policy } from '../policy.js'
import { journaledProposal, rowDisagreements } from '../outbox/journaled-effect.js'
import { recordedQuorum } from '../outbox/recorded-quorum.js'
import type { RuleSource } from '../outbox/release-check.js'
import type { JournalRecord } from '../stores/store.js'

/** Who decides: the operators' policy and the operators this relay trusts. */
export interface SendAuthority {
  policy: Policy & RuleSource
  operators: readonly OperatorConfig[]
}

export type RefusalKind = 'row-disagrees' | 'unauthorized' | 'journal'

export type SendCheck =
  | { ok: true; snapshot: EffectSnapshot }
  /** `hold`: the rule in force that holds it ('unauthorized' only), so it can be held again for operators. */
  | { ok: false; kind: RefusalKind; reasons: string[]; hold?: Hold; snapshot?: EffectSnapshot }

export function checkBeforeSend(row: EffectSnapshot, history: readonly JournalRecord[], authority: SendAuthority): SendCheck {
  const proposal = journaledProposal(history)
  if (!proposal.ok) return { ok: false, kind: 'journal', reasons: [proposal.reason] }
  const last = history.at(-1)!
  const differ = rowDisagreements(row, proposal, last)
  if (differ.length > 0) return { ok: false, kind: 'row-disagrees', reasons: [`its effects row disagrees with its journal: ${differ.join(', ')}`] }
  const snapshot: EffectSnapshot = { ...row, effect: proposal.effect, tier: proposal.tier, state: last.state, seq: last.seq, detail: last.data }
  const unauthorized = authorizationProblems(proposal.effect, proposal.tier, history, authority)
  if (unauthorized) return { ok: false, kind: 'unauthorized', reasons: unauthorized.reasons, hold: unauthorized.hold, snapshot }
  return { ok: true, snapshot }
}

/** Why the journal's authorization of the effect does not stand, and the rule that holds it (undefined: it stands, or there is none yet). */
function authorizationProblems(
  effect: EffectSnapshot['effect'],
  tier: EffectSnapshot['tier'],
  history: readonly JournalRecord[],
  authority: SendAuthority,
): { reasons: string[]; hold: Hold } | undefined {
  // The last decision to authorize; later AUTHORIZED records (an effect given back by its target) rest on it.
  const at = history.findLastIndex((r, i) => r.state === 'AUTHORIZED' && i > 0 && (history[i - 1]!.state === 'PROPOSED' || history[i - 1]!.state === 'HELD'))
  if (at < 0) return undefined
  // What the policy in force says: an effect it lets through needs nobody's release.
  const hold = authority.policy.evaluate(effect, tier)
  if (!hold) return undefined
  const before = history[at - 1]!
  const why = hold.reason === undefined ? '' : ` (${hold.reason})`
  if (before.state === 'HELD') {
    const q = recordedQuorum(effect, history.slice(0, at), { operators: authority.operators, rules: authority.policy })
    if (q.complete) return undefined
    return { reasons: [`it was authorized (record ${history[at]!.seq}) without a valid quorum of releases`, ...q.reasons], hold }
  }
  return { reasons: [`rule "${hold.rule}" holds it${why}, but it was authorized (record ${history[at]!.seq}) without being held, so no operator released it`], hold }
}

/** The data of an AUTHORIZED → HELD record: the rule in force, and why the authorization did not stand. */
export function heldAgainData(hold: Hold, reasons: readonly string[]): JsonObject {
  const data: JsonObject = { rule: hold.rule, heldAgain: [...reasons] }
  if (hold.reason !== undefined) data.reason = hold.reason
  return data
}
