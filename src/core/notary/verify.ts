/**
 * `interlock notary verify`'s engine, offline over a NotaryStore: proves who
 * said what (docs/notary.md, "Verifying the log"). For every effect's chain:
 *
 * - the chain: records numbered 1, 2, 3 ... with no gap (a gap is a deleted
 *   record), each `prev` the hash of the record before it (GENESIS for the
 *   first), each stored hash the hash of its content (an edit shows here);
 * - the writer: trusted for its record's kind (agents: intend, abort;
 *   services: claim, performed, failed) and its signature verifying against
 *   that key (a forged record shows here);
 * - the protocol, replayed record by record: intend first in its attempt;
 *   claim and abort exclude each other (one decision per attempt, never an
 *   outcome and an abort for one attempt); performed or failed only after
 *   the same service's claim; attempt n + 1 only after attempt n was aborted;
 *   and each decision row naming the claim or abort that made it.
 *
 * Records written through the notary meet all of these (log.ts refuses the
 * rest), so a problem means the log was written around the notary: a
 * database attacker, a restore gone wrong, a bug. Attempts the agent intended
 * and no service claimed are listed, not problems: a service that performs
 * without claiming is not notarized, and this is where that shows.
 */
import { GENESIS, NOTARY_KINDS, recordHash, verifyRecord, WRITER_ROLE, type NotaryKind, type StoredRecord } from './records.js'
import { attemptsOf, refusalOf, type AttemptState, type AttemptView } from './state.js'
import { isDecision, type DecisionRow, type NotaryStore } from './store.js'
import type { TrustedKeys } from './log.js'

export interface NotaryVerifyProblem {
  effect: string
  /** The record's number in its effect's chain (0: about the effect's decision rows, not one record). */
  seq: number
  attempt?: number
  kind?: NotaryKind
  message: string
}

export interface NotaryVerifyReport {
  ok: boolean
  effects: number
  records: number
  /** Records per kind. */
  kinds: Record<NotaryKind, number>
  /** Records whose writer is trusted and whose signature verifies / does not. */
  signatures: { valid: number; invalid: number }
  /** Attempts the agent intended that no service claimed, still INTENDED or since ABORTED (not problems). */
  unclaimed: { effect: string; attempt: number; state: AttemptState }[]
  problems: NotaryVerifyProblem[]
  firstBad?: NotaryVerifyProblem
}

export interface ChainCheck {
  problems: NotaryVerifyProblem[]
  signatures: { valid: number; invalid: number }
  attempts: AttemptView[]
}

/** Everything wrong with one effect's stored chain and decision rows ([] when whole). */
export function checkChain(effect: string, chain: readonly StoredRecord[], decisions: readonly DecisionRow[], trusted: TrustedKeys): ChainCheck {
  const problems: NotaryVerifyProblem[] = []
  const signatures = { valid: 0, invalid: 0 }
  const problem = (r: StoredRecord | undefined, message: string) =>
    problems.push(r ? { effect, seq: r.seq, attempt: r.attempt, kind: r.kind, message: `effect ${effect} record ${r.seq} (${r.kind}, attempt ${r.attempt}): ${message}` } : { effect, seq: 0, message: `effect ${effect}: ${message}` })
  const states = new Map<number, AttemptView>()
  let prev = GENESIS
  let expected = 1
  for (const r of chain) {
    if (r.seq !== expected) problem(r, r.seq > expected ? `record${r.seq - expected > 1 ? `s ${expected}-${r.seq - 1} are` : ` ${expected} is`} missing (deleted)` : `numbered ${r.seq} after record ${expected - 1}`)
    if (r.prev !== prev) problem(r, `does not follow the record before it (its prev is not that record's hash): the chain is broken`)
    if (recordHash(r) !== r.hash) problem(r, 'its hash does not match its content: edited after it was written')
    if (r.effect !== effect) problem(r, `names effect ${r.effect}`)
    const keys = WRITER_ROLE[r.kind] === 'agent' ? trusted.agents : trusted.services
    const key = Object.hasOwn(keys, r.writer) ? keys[r.writer] : undefined
    if (key === undefined) {
      signatures.invalid += 1
      problem(r, `written by ${r.writer}, who is not a trusted ${WRITER_ROLE[r.kind]}`)
    } else if (!verifyRecord(r, key)) {
      signatures.invalid += 1
      problem(r, `not signed by ${r.writer}: forged, or altered since it was signed`)
    } else signatures.valid += 1
    const rule = protocolBreach(r, states)
    if (rule) problem(r, rule)
    prev = r.hash
    expected = r.seq + 1
  }
  for (const d of decisionBreaches(chain, decisions)) problems.push({ effect, seq: d.seq, attempt: d.attempt, message: `effect ${effect} ${d.message}` })
  return { problems, signatures, attempts: attemptsOf(effect, chain) }
}

/** Why `r` may not follow what its attempt holds so far (and folds it in). */
function protocolBreach(r: StoredRecord, states: Map<number, AttemptView>): string | undefined {
  const view = states.get(r.attempt) ?? { effect: r.effect, attempt: r.attempt, state: 'NONE' as AttemptState, records: [] }
  let breach: string | undefined
  if (isDecision(r.kind)) {
    const decided = view.records.find((x) => isDecision(x.kind))
    if (decided) breach = `attempt ${r.attempt} was already decided by the ${decided.kind} in record ${decided.seq}${decided.kind !== r.kind ? `: ${decided.kind === 'claim' ? (view.state === 'PERFORMED' ? 'performed' : 'claimed') : 'aborted'} and ${r.kind === 'abort' ? 'aborted' : 'claimed'} both recorded, which the protocol excludes` : ''}`
    else if (view.state !== 'NONE' && view.state !== 'INTENDED') breach = `attempt ${r.attempt} is ${view.state}: ${r.kind} comes before any outcome`
  } else breach = refusalOf(r.kind, view, r.writer)
  if (!breach && view.state === 'NONE' && r.attempt > 1) {
    const before = states.get(r.attempt - 1)
    if (before?.state !== 'ABORTED') breach = `attempt ${r.attempt} begins while attempt ${r.attempt - 1} is ${before?.state ?? 'NONE'}: a new attempt follows only an aborted one`
  }
  const claimedBy = r.kind === 'claim' && !view.claimedBy ? r.writer : view.claimedBy
  const next: AttemptView = { ...view, state: STATE_AFTER[r.kind], records: [...view.records, r], ...(claimedBy ? { claimedBy } : {}) }
  states.set(r.attempt, next)
  return breach
}

const STATE_AFTER: Record<NotaryKind, AttemptState> = { intend: 'INTENDED', claim: 'CLAIMED', abort: 'ABORTED', performed: 'PERFORMED', failed: 'FAILED' }

/** Each attempt's first claim or abort must have its decision row, and each row its record. */
function decisionBreaches(chain: readonly StoredRecord[], decisions: readonly DecisionRow[]): { seq: number; attempt: number; message: string }[] {
  const out: { seq: number; attempt: number; message: string }[] = []
  const rows = new Map(decisions.map((d) => [d.attempt, d]))
  const first = new Map<number, StoredRecord>()
  for (const r of chain) if (isDecision(r.kind) && !first.has(r.attempt)) first.set(r.attempt, r)
  for (const [attempt, r] of first) {
    const d = rows.get(attempt)
    if (!d) out.push({ seq: r.seq, attempt, message: `record ${r.seq} (${r.kind}, attempt ${attempt}): no decision row for it (the row was deleted, or the record written around the notary)` })
    else if (d.decision !== r.kind || d.writer !== r.writer || d.seq !== r.seq) {
      out.push({ seq: r.seq, attempt, message: `record ${r.seq} (${r.kind}, attempt ${attempt}): the decision row says ${d.decision} by ${d.writer} in record ${d.seq}` })
    }
  }
  for (const d of decisions) {
    if (!first.has(d.attempt)) out.push({ seq: d.seq, attempt: d.attempt, message: `attempt ${d.attempt}: decision row (${d.decision} by ${d.writer}, record ${d.seq}) without its record (deleted)` })
  }
  return out
}

/** Verifies every effect in the store. */
export async function verifyNotaryStore(store: NotaryStore, trusted: TrustedKeys): Promise<NotaryVerifyReport> {
  const kinds = Object.fromEntries(NOTARY_KINDS.map((k) => [k, 0])) as Record<NotaryKind, number>
  const report: NotaryVerifyReport = { ok: true, effects: 0, records: 0, kinds, signatures: { valid: 0, invalid: 0 }, unclaimed: [], problems: [] }
  for (const effect of await store.effects()) {
    const chain = await store.chain(effect)
    const check = checkChain(effect, chain, await store.decisions(effect), trusted)
    report.effects += 1
    report.records += chain.length
    for (const r of chain) kinds[r.kind] += 1
    report.signatures.valid += check.signatures.valid
    report.signatures.invalid += check.signatures.invalid
    for (const a of check.attempts) {
      const kinds = new Set(a.records.map((r) => r.kind))
      if (kinds.has('intend') && !kinds.has('claim')) report.unclaimed.push({ effect, attempt: a.attempt, state: a.state })
    }
    report.problems.push(...check.problems)
  }
  report.ok = report.problems.length === 0
  if (report.problems[0]) report.firstBad = report.problems[0]
  return report
}
