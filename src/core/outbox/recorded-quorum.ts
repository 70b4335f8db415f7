/**
 * A quorum the journal already holds. `outbox release` journals each
 * operator's release (HELD → HELD), then, when the quorum is complete, a
 * second record HELD → AUTHORIZED. A crash between the two leaves the effect
 * HELD with every signature it needs; recovery (recovery.ts) asks this module
 * whether that is so, and finishes the release the operators already made.
 *
 * What counts is exactly what releaseQuorum (release-check.ts) counts, with
 * one difference, time:
 *
 * Expiry is judged when the quorum formed, not when recovery runs. A
 * release's expiresAt bounds how long one operator's consent waits for the
 * others; it is not a deadline for Interlock to act on a decision the
 * operators completed. So the releases are replayed in journal order, and at
 * each record that carries one, the quorum is asked as of that record's
 * time (`at`, written by the store and covered by the hash chain, so it
 * cannot be moved without `outbox verify` seeing it): the first record at
 * which distinct trusted operators' releases, all unexpired then, meet the
 * rule's quorum is where the release was complete. Releases that had expired
 * before the last of them was recorded never form a quorum, however late
 * recovery comes. The rule (its quorum and release_ttl) and the trusted
 * operators are today's interlock.toml, as for `outbox release` itself: an
 * operator no longer trusted, or a rule no longer declared, counts for
 * nothing.
 *
 * "Not used elsewhere": a release names its effect id and the effect's
 * digest, so it counts for no other effect (releaseQuorum refuses it there);
 * within this effect a nonce seen twice is a replay, and an operator counts
 * once. Pure: the journal, keys and rules come in as arguments.
 */
import type { JsonObject } from '../canonical-json.js'
import type { OperatorConfig } from '../config/types.js'
import { signedJson, type ReleaseStatement, type Signed } from '../crypto/statements.js'
import type { Effect } from '../effect.js'
import type { JournalRecord } from '../stores/store.js'
import { heldRule, releasesOf } from './journal-statements.js'
import { releaseQuorum, type RuleSource } from './release-check.js'

/** Who may release and under which rules: the trusted [[operators]] and [[policy.rules]]. */
export interface ReleaseAuthority {
  operators: readonly OperatorConfig[]
  rules: RuleSource
}

export type RecordedQuorum =
  | {
      complete: true
      rule: string
      /** The record whose release completed the quorum. */
      completedBy: { seq: number; at: string }
      signers: string[]
      accepted: Signed<ReleaseStatement>[]
      needed: number
    }
  | {
      complete: false
      rule?: string
      /** Distinct operators whose releases count, and how many the rule needs (Infinity: no such rule). */
      have: number
      needed: number
      /** Why each recorded release does not count, then why the quorum is not met. */
      reasons: string[]
    }

export function recordedQuorum(effect: Effect, history: readonly JournalRecord[], authority: ReleaseAuthority): RecordedQuorum {
  const held = heldRule(history)
  if (!held) return { complete: false, have: 0, needed: Number.POSITIVE_INFINITY, reasons: ['its journal names no rule that held it'] }
  const rule = authority.rules.rule(held.rule)
  const needed = rule?.quorum ?? Number.POSITIVE_INFINITY
  let last: { have: number; reasons: string[] } | undefined
  for (const [i, r] of history.entries()) {
    if (r.state !== 'HELD' || releasesOf([r]).length === 0) continue
    // The releases recorded up to and including this record, judged at its time.
    const q = releaseQuorum({ effect, rule: held.rule }, releasesOf(history.slice(0, i + 1)), authority.operators, authority.rules, new Date(r.at))
    if (q.ok) return { complete: true, rule: held.rule, completedBy: { seq: r.seq, at: r.at }, signers: q.signers, accepted: q.accepted, needed: q.needed }
    last = { have: q.signers.length, reasons: q.reasons }
  }
  if (last) return { complete: false, rule: held.rule, have: last.have, needed, reasons: last.reasons }
  return noReleaseYet(held.rule, authority)
}

/** A HELD effect none has released yet (its last record carries no release): known without reading its history. */
export function noReleaseYet(ruleName: string, authority: ReleaseAuthority): RecordedQuorum {
  const rule = authority.rules.rule(ruleName)
  const why = rule ? `no release recorded yet; rule "${ruleName}" needs ${rule.quorum}` : `rule "${ruleName}" is no longer declared in interlock.toml; restore it or deny the effect`
  return { complete: false, rule: ruleName, have: 0, needed: rule?.quorum ?? Number.POSITIVE_INFINITY, reasons: [why] }
}

/**
 * The AUTHORIZED record recovery writes: what `outbox release` would have
 * written (rule, the releases that counted, signers), plus where the quorum
 * was completed, so an auditor sees that recovery finished it and `outbox
 * verify` judges expiry at that record.
 */
export function recoveredAuthorization(q: Extract<RecordedQuorum, { complete: true }>): JsonObject {
  return {
    rule: q.rule,
    releases: q.accepted.map(signedJson),
    signers: q.signers,
    recovered: { quorumSeq: q.completedBy.seq, quorumAt: q.completedBy.at },
  }
}
