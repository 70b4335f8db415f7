/**
 * scanInFlight's fold, shared by both stores: the journals are read in
 * (journal, seq) order, every record is verified (hash chain and lifecycle),
 * and the in-flight snapshots are rebuilt from the records themselves.
 *
 * Why rebuild instead of trusting the `effects` table: recovery acts on what
 * it finds (re-applies, marks AMBIGUOUS), so it must act on verified data.
 * The table is a projection used to pick which journals to read; any
 * disagreement between it and the journal is an IntegrityError too.
 *
 * Hot path (a million records in a few seconds): records arrive as loose
 * fields, data stays as its stored text (the hash covers that exact text),
 * and only the data of effects still in flight is ever parsed.
 */
import type { EffectSnapshot, Tier } from '../effect.js'
import { STATES, TRANSITIONS, isTerminal, type State } from '../lifecycle.js'
import type { ChainHead } from './append-plan.js'
import { integrity, parseRecordData } from './record-data.js'
import { ChainVerifier } from './record-hash.js'
import { GENESIS_HASH, type JournalRecord } from './store.js'

/** An in-flight effect as the `effects` table claims it. */
export interface ProjectedEffect {
  id: string
  journal: string
  state: string
  seq: number
}

interface Kept {
  journal: string
  proposedSeq: number
  proposedText?: string
  createdAt?: string
  lastText: string
  updatedAt: string
}

/**
 * Where journal reads start: below any seq, so a record whose seq was set to
 * 0 or below behind the store's back is read (and refused), not skipped.
 */
export const BEFORE_ANY_SEQ = Number.MIN_SAFE_INTEGER

// ChainVerifier reads `data` only when no text is passed; the fold always passes the text.
const UNPARSED = Object.freeze({}) as JournalRecord['data']
const KNOWN = new Set<string>(STATES)
const NEXT = new Map<string, ReadonlySet<string>>(STATES.map((s) => [s, new Set(TRANSITIONS[s])]))

interface Last {
  journal: string
  state: State
  seq: number
}

export class InFlightFold {
  recordsRead = 0
  private readonly verifier = new ChainVerifier()
  private readonly last = new Map<string, Last>()
  private readonly kept = new Map<string, Kept>()
  private readonly tails = new Map<string, ChainHead>()
  // One record object reused for every check (the verifier keeps none of it): a million fewer allocations.
  private readonly scratch: JournalRecord = { journal: '', seq: 0, effectId: '', state: 'PROPOSED', at: '', data: UNPARSED, prevHash: '', hash: '' }

  /**
   * @param wanted ids of the effects to rebuild (the projection's in-flight ones)
   * @param bases where pruned journals start (their last removed record): the chain resumes from it
   */
  constructor(
    private readonly wanted: ReadonlySet<string>,
    private readonly bases: ReadonlyMap<string, ChainHead> = new Map(),
  ) {}

  /** One record; records must come in (journal, seq) order. */
  add(journal: string, seq: number, effectId: string, state: string, at: string, dataText: string, prevHash: string, hash: string): void {
    this.recordsRead++
    if (!KNOWN.has(state)) throw integrity(journal, seq, `has an unknown state ${JSON.stringify(state)}`)
    const r = this.scratch
    r.journal = journal
    r.seq = seq
    r.effectId = effectId
    r.state = state as State
    r.at = at
    r.prevHash = prevHash
    r.hash = hash
    const tail = this.tails.get(journal)
    if (!tail) {
      const base = this.bases.get(journal)
      if (base) this.verifier.resume(journal, base.seq, base.hash)
    }
    this.verifier.check(r, dataText)
    const prev = this.last.get(effectId)
    if (prev ? !NEXT.get(prev.state)!.has(state) : state !== 'PROPOSED') {
      throw integrity(journal, seq, `moves effect ${effectId} from ${prev?.state ?? '(none)'} to ${state}, which the lifecycle forbids`)
    }
    if (prev) {
      prev.state = state as State
      prev.seq = seq
    } else {
      this.last.set(effectId, { journal, state: state as State, seq })
    }
    if (tail) {
      tail.seq = seq
      tail.hash = hash
    } else {
      this.tails.set(journal, { seq, hash })
    }
    if (this.wanted.has(effectId)) {
      const k = this.kept.get(effectId)
      if (k) {
        k.lastText = dataText
        k.updatedAt = at
      } else {
        this.kept.set(effectId, { journal, proposedSeq: seq, proposedText: dataText, createdAt: at, lastText: dataText, updatedAt: at })
      }
    }
  }

  /**
   * Checks every journal read ends at its recorded head (a record removed from
   * the end leaves no gap in the chain, only a head that points past it) and
   * that the projection and the journal agree; returns the in-flight
   * snapshots, oldest proposal first.
   */
  finish(heads: ReadonlyMap<string, ChainHead>, projection: readonly ProjectedEffect[]): EffectSnapshot[] {
    for (const [journal, head] of heads) {
      const tail = this.tails.get(journal) ?? this.bases.get(journal) ?? { seq: 0, hash: GENESIS_HASH }
      if (tail.seq !== head.seq || tail.hash !== head.hash) {
        throw integrity(journal, head.seq, `is the journal's recorded head, but the last record found is ${tail.seq}; records were removed from the end or the head was altered`)
      }
    }
    const projected = new Map(projection.map((p) => [p.id, p]))
    for (const [id, l] of this.last) {
      const p = projected.get(id)
      if (!isTerminal(l.state) && (!p || p.state !== l.state || p.seq !== l.seq)) {
        throw integrity(l.journal, l.seq, `leaves effect ${id} ${l.state}, but the effects table says ${p ? `${p.state} at record ${p.seq}` : 'it is settled'}`)
      }
    }
    for (const p of projection) {
      const l = this.last.get(p.id)
      if (!l || l.state !== p.state || l.seq !== p.seq) {
        throw integrity(p.journal, p.seq, `is where the effects table puts effect ${p.id} (${p.state}), but the journal ${l ? `has it ${l.state} at record ${l.seq}` : 'has no record of it'}`)
      }
    }
    const out: EffectSnapshot[] = []
    for (const [id, k] of this.kept) {
      const l = this.last.get(id)!
      const proposed = parseRecordData(k.journal, k.proposedSeq, k.proposedText!) as unknown as { effect: EffectSnapshot['effect']; tier: Tier }
      out.push({
        effect: proposed.effect,
        tier: proposed.tier,
        state: l.state,
        seq: l.seq,
        detail: parseRecordData(k.journal, l.seq, k.lastText),
        createdAt: k.createdAt!,
        updatedAt: k.updatedAt,
      })
    }
    return out
  }
}
