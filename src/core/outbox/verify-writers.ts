/**
 * `outbox verify`'s check of who wrote each record. Anyone with write access
 * to the store can append a record the lifecycle allows (DISPATCHED →
 * FAILED) and recompute the chain; only a signature by a writer the auditor
 * trusts tells such a record from the real ones.
 *
 * A record past PROPOSED is covered by one of:
 * - a seal (crypto/seal.ts) listing its hash, by a trusted relay key or a
 *   trusted operator (verify-seals.ts): what writers sign now, one per commit;
 * - its record signature (what writers signed before seals) (crypto/record-signature.ts), by a trusted relay key
 *   (a relay, or a gate or reconcile-effects holding the relay's key), or by a
 *   trusted operator (an operator's re-send of an effect), bound to the effect,
 *   the transition, the effect's record it follows and its data;
 * - an operator's signed act the record carries (a release, denial or
 *   resolution: checked in verify.ts);
 * - for the policy's decision (PROPOSED → AUTHORIZED or HELD), the policy in
 *   force, which verify.ts applies again: whoever wrote it, it is what the
 *   rules give (outbox agents of earlier versions wrote these records);
 * - a signed anchor (anchor-file.ts) whose head for the journal lies at or
 *   after it, when the journal still reaches that head.
 * Without a relay key nothing relay-signed can be checked: such records are
 * counted as unchecked, never as failures. With one, every other record past
 * PROPOSED is a problem, named by journal and record.
 *
 * Why no allowance for unsigned records "written before records were signed":
 * a journal whose signatures were all stripped (chain recomputed) looks
 * exactly like one, so such an allowance would let a whole forged journal
 * through. Records written unsigned are vouched for only by an anchor taken
 * over them (`outbox anchor --cover-unsigned`, after a person has checked
 * them); everything after its heads, and every journal it does not name,
 * must be signed. The anchor also fails a journal that no longer reaches its
 * anchored head, or reaches another record there.
 */
import type { JsonObject } from '../canonical-json.js'
import { nativeVerifier } from '../crypto/native-ed25519.js'
import { followsOf, recordDataDigest, recordSignatureOf, type RecordSignature } from '../crypto/record-signature.js'
import { statementBytes } from '../crypto/sign.js'
import { isTerminal, type State } from '../lifecycle.js'
import type { JournalRecord } from '../stores/store.js'
import type { TrustedAnchor } from './anchor-file.js'
import type { SealIndex } from './verify-seals.js'
import type { TrustedKey } from './verify.js'

/** How the records past PROPOSED that a relay or gate writes were found covered. */
export interface WriterCounts {
  /** Records covered by a trusted seal, or by a record signature that verified with a trusted key and matches its record. */
  valid: number
  /** Of those, the records covered by seals. */
  sealed: number
  /** Record signatures that did not (each is a problem). */
  invalid: number
  /** Records a relay signs, not checked because no relay key was given. */
  unchecked: number
  /** With relay keys: records with no signature and nothing else covering them (problems). */
  unsigned: number
  /** Unsigned records at or before their journal's anchored head, which the journal still reaches. */
  byAnchor: number
}

/** What the check keeps per effect (part of verify's track). */
export interface WriterTrack {
  /** Seqs of the effect's records in its current state (a record signature may follow any of them). */
  runSeqs: number[]
  /**
   * Their data, for what a record signature names them by (followsOf, worked
   * out only when a signature asks); not kept once the effect is settled,
   * when no record can follow.
   */
  runData: JsonObject[]
  /** Its records nothing covers (reported when every record has been read, one problem per effect). */
  unsigned?: number[]
  journal: string
}

export interface WriterKeys {
  operators: ReadonlyMap<string, string>
  relays: readonly TrustedKey[]
}

type Problem = (r: Pick<JournalRecord, 'journal' | 'seq' | 'effectId'>, message: string, kind?: 'unsigned') => void

interface AnchoredJournal {
  /** Unsigned records waiting for the head to be reached. */
  pending: number
  reached: boolean
  differs: boolean
}

export class WriterCheck {
  readonly counts: WriterCounts = { valid: 0, sealed: 0, invalid: 0, unchecked: 0, unsigned: 0, byAnchor: 0 }
  private readonly verify = nativeVerifier()
  private readonly anchored = new Map<string, AnchoredJournal>()

  /**
   * @param prunedTo where a journal's trusted checkpoint says its pruned records end: an anchored head
   *   at or before it was removed with them, and the checkpoint's signer verified the chain through it
   */
  constructor(
    private readonly keys: WriterKeys,
    private readonly anchor: TrustedAnchor | undefined,
    private readonly problem: Problem,
    private readonly prunedTo: (journal: string) => number | undefined = () => undefined,
    /** The seals read before the records (asked for at the first record that needs one). */
    private readonly seals: () => SealIndex | undefined = () => undefined,
  ) {}

  /**
   * One record whose chain verified. `covered`: it carries a valid operator
   * statement that covers its transition, or is a policy decision verify
   * judged again.
   */
  record(r: JournalRecord, from: State | null, t: WriterTrack, covered: boolean): void {
    this.atAnchor(r)
    const sig = recordSignatureOf(r.data)
    if (sig === 'malformed') {
      this.counts.invalid++
      this.problem(r, `${where(r)} carries a record signature that is not a signed record statement`)
    } else if (sig) {
      this.signature(r, from, t, sig)
    } else {
      // Counted like a record signature, whatever the record: a sealing writer seals its proposals and decisions too.
      const by = this.seals()?.sealed(r.hash)
      if (by === 'unchecked') this.counts.unchecked++
      else if (by) {
        this.counts.valid++
        this.counts.sealed++
      } else if (r.state !== 'PROPOSED' && !covered) {
        if (this.keys.relays.length === 0) this.counts.unchecked++
        else if (!this.anchorCovers(r)) (t.unsigned ??= []).push(r.seq)
      }
    }
    const data = isTerminal(r.state) ? [] : [r.data as JsonObject]
    if (from === r.state) {
      t.runSeqs.push(r.seq)
      t.runData.push(...data)
    } else {
      t.runSeqs = [r.seq]
      t.runData = data
    }
  }

  /** After the last record: what the anchor and the effects' unsigned records come to. */
  finish(effects: ReadonlyMap<string, WriterTrack>, tails: ReadonlyMap<string, number>, broken: ReadonlySet<string>): void {
    if (this.anchor) {
      for (const [journal, head] of this.anchor.heads) {
        if (broken.has(journal)) continue
        const a = this.anchored.get(journal)
        if (a?.reached) {
          this.counts.byAnchor += a.pending
          continue
        }
        if (!a?.differs && head.seq <= (this.prunedTo(journal) ?? 0)) continue
        this.counts.unsigned += a?.pending ?? 0
        if (a?.differs) continue
        const tail = tails.get(journal)
        this.problem(
          { journal, seq: head.seq, effectId: '?' },
          `journal ${JSON.stringify(journal)} ${tail === undefined ? 'has no records' : `ends at record ${tail}`}, but the anchor ${this.anchor.path} (signed by ${this.anchor.role} ${this.anchor.signer} at ${this.anchor.at}) saw it reach record ${head.seq}: records were removed from its end`,
        )
      }
    }
    for (const [id, t] of effects) {
      if (!t.unsigned || broken.has(t.journal)) continue
      this.counts.unsigned += t.unsigned.length
      const seqs = t.unsigned
      this.problem(
        { journal: t.journal, seq: seqs[0]!, effectId: id },
        `journal ${JSON.stringify(t.journal)} record${seqs.length === 1 ? '' : 's'} ${seqs.join(', ')} of effect ${id} ${seqs.length === 1 ? 'carries' : 'carry'} no seal or signature of a trusted writer and no operator's signed act: written by someone else with access to the store`,
        'unsigned',
      )
    }
  }

  private signature(r: JournalRecord, from: State | null, t: WriterTrack, sig: RecordSignature): void {
    const st = sig.statement
    // `follows` names the record followed by its content; `after` (earlier versions) by its seq.
    const follows =
      st.follows !== undefined
        ? from === null
          ? st.follows === null
          : st.follows !== null && t.runData.some((d) => followsOf(d) === st.follows)
        : from === null
          ? st.after === 0
          : t.runSeqs.includes(st.after!)
    const followed = st.follows !== undefined ? 'another record of the effect' : `record ${st.after}`
    const mismatch =
      st.effectId !== r.effectId
        ? `was signed for effect ${st.effectId}`
        : st.from !== from || st.to !== r.state
          ? `was signed for ${st.from ?? '(none)'} → ${st.to}, but the record moves the effect ${from ?? '(none)'} → ${r.state}`
          : !follows
            ? `was signed to follow ${followed}, but the record follows record ${t.runSeqs.at(-1) ?? 0}: it was moved or replayed`
            : st.dataDigest !== recordDataDigest(r.data as JsonObject)
              ? 'does not match the record\'s data: the data was altered after it was signed'
              : undefined
    if (mismatch) {
      this.counts.invalid++
      this.problem(r, `${where(r)}: its record signature by ${st.role} ${st.signer} ${mismatch}`)
      return
    }
    let candidates: string[]
    if (st.role === 'operator') {
      candidates = [this.keys.operators.get(st.signer)].filter((k): k is string => k !== undefined)
    } else {
      if (this.keys.relays.length === 0) {
        this.counts.unchecked++
        return
      }
      // As for receipts: a relay keeps its id across key rotations; a given key equal to the one named counts too.
      candidates = this.keys.relays.filter((k) => k.name === st.signer || k.publicKey === sig.publicKey).map((k) => k.publicKey)
    }
    const message = statementBytes(st)
    if (candidates.some((k) => this.verify(k, message, sig.signature))) {
      this.counts.valid++
      return
    }
    this.counts.invalid++
    const why =
      candidates.length === 0
        ? st.role === 'operator'
          ? `is by "${st.signer}", who is not a trusted operator`
          : `is by relay ${st.signer}${typeof sig.publicKey === 'string' ? ` with key ${sig.publicKey}` : ''}, which is not a trusted relay key`
        : `does not verify with ${st.role} ${st.signer}'s trusted key (forged or altered)`
    this.problem(r, `${where(r)}: its record signature ${why}`)
  }

  private atAnchor(r: JournalRecord): void {
    const head = this.anchor?.heads.get(r.journal)
    if (!head || r.seq !== head.seq) return
    const a = this.anchoredJournal(r.journal)
    if (r.hash === head.hash) a.reached = true
    else {
      a.differs = true
      this.problem(r, `${where(r)} is not the record the anchor ${this.anchor!.path} (signed by ${this.anchor!.role} ${this.anchor!.signer} at ${this.anchor!.at}) holds at this place: the journal was rewritten at or before it`)
    }
  }

  private anchorCovers(r: JournalRecord): boolean {
    if (!this.anchor) return false
    const head = this.anchor.heads.get(r.journal)
    if (!head || r.seq > head.seq) return false
    this.anchoredJournal(r.journal).pending++
    return true
  }

  private anchoredJournal(journal: string): AnchoredJournal {
    let a = this.anchored.get(journal)
    if (!a) this.anchored.set(journal, (a = { pending: 0, reached: false, differs: false }))
    return a
  }
}

function where(r: Pick<JournalRecord, 'journal' | 'seq' | 'state'>): string {
  return `journal ${JSON.stringify(r.journal)} record ${r.seq} (${r.state})`
}
