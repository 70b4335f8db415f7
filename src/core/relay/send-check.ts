/**
 * What a relay checks before it works on a claimed effect, from the effect's
 * verified journal, never from its mutable row (docs/design.md, "The trust boundary"):
 *
 * 1. The row agrees with its journal: args, premises, target, action, key,
 *    thread and tier with the PROPOSED record; state and last seq with the
 *    last record. A row that disagrees was edited behind the journal.
 * 2. An effect that has been authorized was authorized by the side that may:
 *    - from HELD: the journaled releases form a quorum, judged exactly as
 *      recovery judges a stranded release (outbox/recorded-quorum.ts):
 *      distinct operators trusted by this relay's config, signatures over the
 *      digest of the journaled effect, unexpired when the quorum formed, no
 *      nonce used twice. Releases a forged AUTHORIZED record carries count
 *      for nothing: only the HELD records each operator's release journaled.
 *    - straight from PROPOSED: the policy in force would not hold it. One it
 *      would hold was never released (releases are journaled on HELD records
 *      only), so it is refused.
 *
 * On success the relay goes on with the snapshot rebuilt from the journal, so
 * what it sends is the PROPOSED record's args and premises, the ones the
 * releases signed. Pure: history, policy and operators come in as arguments.
 */
import type { OperatorConfig } from '../config/types.js'
import type { EffectSnapshot } from '../effect.js'
import type { Policy } from '../policy.js'
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

export type SendCheck = { ok: true; snapshot: EffectSnapshot } | { ok: false; kind: RefusalKind; reasons: string[] }

export function checkBeforeSend(row: EffectSnapshot, history: readonly JournalRecord[], authority: SendAuthority): SendCheck {
  const proposal = journaledProposal(history)
  if (!proposal.ok) return { ok: false, kind: 'journal', reasons: [proposal.reason] }
  const last = history.at(-1)!
  const differ = rowDisagreements(row, proposal, last)
  if (differ.length > 0) return { ok: false, kind: 'row-disagrees', reasons: [`its effects row disagrees with its journal: ${differ.join(', ')}`] }
  const unauthorized = authorizationProblems(proposal.effect, proposal.tier, history, authority)
  if (unauthorized.length > 0) return { ok: false, kind: 'unauthorized', reasons: unauthorized }
  return {
    ok: true,
    snapshot: { ...row, effect: proposal.effect, tier: proposal.tier, state: last.state, seq: last.seq, detail: last.data },
  }
}

/** Why the journal's authorization of the effect does not stand (empty: it stands, or there is none yet). */
function authorizationProblems(
  effect: EffectSnapshot['effect'],
  tier: EffectSnapshot['tier'],
  history: readonly JournalRecord[],
  authority: SendAuthority,
): string[] {
  // The first authorization is the decision; later AUTHORIZED records (an effect given back
  // by its target) rest on it.
  const at = history.findIndex((r) => r.state === 'AUTHORIZED')
  if (at < 0) return []
  const before = history[at - 1]!
  if (before.state === 'HELD') {
    const q = recordedQuorum(effect, history.slice(0, at), { operators: authority.operators, rules: authority.policy })
    if (q.complete) return []
    return [`it was authorized (record ${history[at]!.seq}) without a valid quorum of releases`, ...q.reasons]
  }
  const hold = authority.policy.evaluate(effect, tier)
  if (!hold) return []
  const why = hold.reason === undefined ? '' : ` (${hold.reason})`
  return [`rule "${hold.rule}" holds it${why}, but it was authorized (record ${history[at]!.seq}) without being held, so no operator released it`]
}
