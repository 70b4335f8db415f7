/**
 * One effect's journal as a timeline for a person: each record's state and
 * time, who signed it, and whether its signatures and its chain link verify
 * (every record here does: a history that does not is refused by the store
 * with the record that broke it, and shown as such).
 *
 * Nothing here judges a record on its own terms: the history comes from the
 * store's history(), which checks every record against its hash and links it
 * to the record before it in its journal (stores/history-check.ts), and the
 * signatures are judged by `outbox verify`'s own engine (verify.ts, read as
 * one effect's history). This module only sorts what those found by record.
 */
import type { JsonObject } from '../canonical-json.js'
import type { OperatorConfig } from '../config/types.js'
import { recordSignatureOf } from '../crypto/record-signature.js'
import type { State } from '../lifecycle.js'
import type { Policy } from '../policy.js'
import type { JournalRecord } from '../stores/store.js'
import { statementsIn } from './journal-statements.js'
import type { RuleSource } from './release-check.js'
import { verifyRecords, type TrustedKey } from './verify.js'
import { SealIndex } from './verify-seals.js'

/**
 * - valid: every signature it carries verifies with a trusted key;
 * - invalid: one does not, or the record breaks a rule verify checks (problems say which);
 * - unchecked: signed by a relay, and no relay key is known to check it with;
 * - decision: the policy's PROPOSED → AUTHORIZED or HELD, judged again by the policy in force;
 * - proposal: PROPOSED, vouched for by the effect's id (the hash of what it proposes);
 * - unsigned: no signature and nothing else vouches for it (verify fails it when a relay key is known).
 */
export type SignatureVerdict = 'valid' | 'invalid' | 'unchecked' | 'decision' | 'proposal' | 'unsigned'

export interface TimelineEntry {
  journal: string
  seq: number
  state: State
  at: string
  /** "relay r1", "operator alice (release)": the record's writer, then each signed statement it carries. */
  signers: string[]
  signature: SignatureVerdict
  /** What verify found wrong with this record. */
  problems: string[]
  data: JsonObject
}

export interface TimelineOptions {
  operators: readonly OperatorConfig[]
  /** Trusted relay public keys (relay-keys.ts); without any, relay signatures are unchecked. */
  relays: readonly TrustedKey[]
  policy?: RuleSource & Pick<Policy, 'evaluate'>
  /** The seals of the commits the records were written in (Store.seals with their times). */
  seals?: readonly unknown[]
}

export async function effectTimeline(history: readonly JournalRecord[], opts: TimelineOptions): Promise<TimelineEntry[]> {
  const report = await verifyRecords(history, { operators: opts.operators, relays: opts.relays, policy: opts.policy, seals: opts.seals, oneEffect: true })
  // Who sealed each record, as verify judged the seals (their own problems are verify's, above).
  const seals = new SealIndex(opts.seals ?? [], { operators: new Map(opts.operators.map((o) => [o.name, o.publicKey])), relays: opts.relays }, () => {})
  const bySeq = new Map<number, string[]>()
  let unsignedFlagged = false
  for (const p of report.problems) {
    if (p.kind === 'unsigned') unsignedFlagged = true
    else bySeq.set(p.seq, [...(bySeq.get(p.seq) ?? []), p.message])
  }
  let from: State | null = null
  return history.map((r) => {
    const problems = bySeq.get(r.seq) ?? []
    const sig = recordSignatureOf(r.data)
    const statements = statementsIn(r.data)
    const signers: string[] = []
    const sealed = seals.sealed(r.hash)
    if (sig === 'malformed') signers.push('a malformed record signature')
    else if (sig) signers.push(`${sig.statement.role} ${sig.statement.signer}`)
    else if (sealed === 'unchecked') signers.push('a relay (seal, not checked: no relay key)')
    else if (sealed) signers.push(`${sealed.role} ${sealed.signer} (seal ${sealed.n})`)
    for (const s of statements) signers.push(s.statement.kind === 'receipt' ? `relay ${s.statement.relay} (receipt)` : `operator ${s.statement.operator} (${s.statement.kind})`)
    const relaySigned = (sig && sig !== 'malformed' && sig.statement.role === 'relay') || sealed === 'unchecked' || statements.some((s) => s.statement.kind === 'receipt')
    let signature: SignatureVerdict
    if (problems.length > 0) signature = 'invalid'
    else if (signers.length > 0) signature = relaySigned && opts.relays.length === 0 ? 'unchecked' : 'valid'
    else if (r.state === 'PROPOSED') signature = 'proposal'
    else if (from === 'PROPOSED' && (r.state === 'AUTHORIZED' || r.state === 'HELD') && opts.policy) signature = 'decision'
    else signature = 'unsigned'
    if (signature === 'unsigned' && unsignedFlagged) problems.push('no seal or signature of a trusted writer and no operator\'s signed act: `outbox verify` fails it')
    from = r.state
    return { journal: r.journal, seq: r.seq, state: r.state, at: r.at, signers, signature, problems, data: r.data }
  })
}
