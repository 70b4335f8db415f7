/**
 * Where operator statements live in the journal (the choice, and why):
 * every statement rides in the data of a hash-chained journal record, so
 * `outbox verify` and an exported journal check them offline with the chain,
 * and no second table can drift from the journal.
 *
 * - a release that does not complete the quorum: HELD → HELD { rule, reason?, release }
 *   (the lifecycle allows HELD → HELD for exactly this);
 * - the release that completes it: HELD → AUTHORIZED { rule, releases: [...], signers }
 *   carrying every release that counted;
 * - a denial: HELD → REJECTED { rule, violations, denial };
 * - a resolution: AMBIGUOUS → COMMITTED | FAILED | DISPATCHED { resolution, ... }.
 */
import type { JsonObject } from '../canonical-json.js'
import { asSigned, type OperatorStatement, type RelayReceiptStatement, type ReleaseStatement, type Signed } from '../crypto/statements.js'
import type { JournalRecord } from '../stores/store.js'

/**
 * The rule that holds the effect now: from its last HELD record (each release
 * repeats it; an effect held again before sending, AUTHORIZED → HELD, names
 * the rule in force then).
 */
export function heldRule(history: readonly JournalRecord[]): { rule: string; reason?: string } | undefined {
  const held = history.findLast((r) => r.state === 'HELD')
  if (!held || typeof held.data.rule !== 'string') return undefined
  return typeof held.data.reason === 'string' ? { rule: held.data.rule, reason: held.data.reason } : { rule: held.data.rule }
}

/** Every release signed for this effect so far, oldest first. */
export function releasesOf(history: readonly JournalRecord[]): Signed<ReleaseStatement>[] {
  const out: Signed<ReleaseStatement>[] = []
  for (const r of history) {
    if (r.state !== 'HELD') continue
    const s = asSigned(r.data.release)
    if (s && s.statement.kind === 'release') out.push(s as Signed<ReleaseStatement>)
  }
  return out
}

/** Every signed statement a record carries, wherever in its data: for verify and show. */
export function statementsIn(data: JsonObject): Signed<OperatorStatement | RelayReceiptStatement>[] {
  const out: Signed<OperatorStatement | RelayReceiptStatement>[] = []
  for (const value of Object.values(data)) {
    const one = asSigned(value)
    if (one) out.push(one)
    else if (Array.isArray(value)) for (const v of value) {
      const s = asSigned(v)
      if (s) out.push(s)
    }
  }
  return out
}
