/**
 * scanInFlight's check, shared by both stores: recovery reads the records of
 * the effects in flight, not the journals they sit in, so its cost grows with
 * what is in flight, never with history (docs/design.md, "Recovery").
 *
 * Each in-flight effect's records are checked as a journal read would check
 * them, link by link: its content against its hash, its previous-hash against
 * the record just before it in the journal (whatever effect that one belongs
 * to; the journal's base when it was pruned there), and the record just after
 * it (or the journal's recorded head, for the last) against it; its states
 * follow the lifecycle from PROPOSED; its last record is where the effects
 * table says. Each journal read ends at its recorded head: that record is
 * there with that hash, and nothing lies beyond it.
 *
 * So recovery never acts on an in-flight effect whose own records were
 * altered, removed, reordered, inserted or unchained. What it no longer reads
 * is the settled history around them: `outbox verify` checks that, offline,
 * and `outbox checkpoint` verifies it once and pins it under a signature
 * (outbox/checkpoint.ts), so a rewrite of it is still found.
 *
 * Why rebuild the snapshots instead of trusting the `effects` table: recovery
 * acts on what it finds (re-applies, marks AMBIGUOUS), so it acts on verified
 * data. The table says which effects to read; any disagreement between it and
 * their records is an IntegrityError.
 */
import type { EffectSnapshot, Tier } from '../effect.js'
import { STATES, TRANSITIONS, type State } from '../lifecycle.js'
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

/** One record of an in-flight effect, with its neighbours' links. */
export interface InFlightRow {
  journal: string
  seq: number
  effectId: string
  state: string
  at: string
  /** The stored canonical JSON text the hash covers. */
  dataText: string
  prevHash: string
  hash: string
  /** Hash of the record before it in the journal (or of the journal's base, when pruned right there); null when there is none. */
  predecessor: string | null
  /** Previous-hash of the record after it in the journal; null when there is none. */
  successor: string | null
}

/** Where a journal ends, as the store records it and as its records are. */
export interface JournalEnd {
  journal: string
  /** The recorded head (GENESIS_HASH at 0 when the journal has no head row). */
  head: ChainHead
  /** Hash of the record at the head's seq (or of the base, when pruned right there); null when there is none. */
  atHead: string | null
  /** The first record past the head, if any: written behind the store's back. */
  beyond: number | null
}

const KNOWN = new Set<string>(STATES)
const NEXT = new Map<string, ReadonlySet<string>>(STATES.map((s) => [s, new Set(TRANSITIONS[s])]))

/**
 * Checks the records of the in-flight effects and the ends of their journals;
 * returns their snapshots, oldest proposal first, and each one's records.
 * Throws an IntegrityError naming the first record (in journal, seq order)
 * that does not fit.
 */
export function checkInFlight(
  projection: readonly ProjectedEffect[],
  rows: readonly InFlightRow[],
  ends: ReadonlyMap<string, JournalEnd>,
): { effects: EffectSnapshot[]; histories: Map<string, JournalRecord[]> } {
  const sorted = [...rows].sort((a, b) => (a.journal < b.journal ? -1 : a.journal > b.journal ? 1 : a.seq - b.seq))
  const projected = new Map(projection.map((p) => [p.id, p]))
  const verifier = new ChainVerifier()
  const runs = new Map<string, InFlightRow[]>()
  // Each record on its own and against the one before it first, so a removed record is named by the one that follows the gap.
  for (const r of sorted) {
    const p = projected.get(r.effectId)
    if (!KNOWN.has(r.state)) throw integrity(r.journal, r.seq, `has an unknown state ${JSON.stringify(r.state)}`)
    if (p && p.journal !== r.journal) throw integrity(r.journal, r.seq, `is a record of effect ${r.effectId}, whose records are in journal ${JSON.stringify(p.journal)}`)
    const before = r.seq === 1 ? GENESIS_HASH : r.predecessor
    if (before === null) throw integrity(r.journal, r.seq, `follows record ${r.seq - 1}, which is missing`)
    verifier.resume(r.journal, r.seq - 1, before)
    verifier.check(asRecord(r), r.dataText)
    const run = runs.get(r.effectId)
    const prev = run?.at(-1)
    if (prev ? !NEXT.get(prev.state)!.has(r.state) : r.state !== 'PROPOSED') {
      throw integrity(r.journal, r.seq, `moves effect ${r.effectId} from ${prev?.state ?? '(none)'} to ${r.state}, which the lifecycle forbids`)
    }
    if (run) run.push(r)
    else runs.set(r.effectId, [r])
  }
  // Then the record after each: a record altered with its own hash recomputed no longer matches what follows it.
  for (const r of sorted) {
    if (r.successor !== null && r.successor !== r.hash) {
      throw integrity(r.journal, r.seq + 1, `has a previous-hash that does not match record ${r.seq}; the chain is broken there`)
    }
    const end = ends.get(r.journal)
    if (r.successor === null && end && r.seq < end.head.seq) {
      const why = r.seq + 1 === end.head.seq ? 'records were removed from the end or the head was altered' : 'records were removed'
      throw integrity(r.journal, r.seq + 1, `is missing: record ${r.seq} is followed by nothing, but the journal's recorded head is record ${end.head.seq}; ${why}`)
    }
  }
  for (const p of projection) {
    const last = runs.get(p.id)?.at(-1)
    if (!last || last.state !== p.state || last.seq !== p.seq) {
      throw integrity(p.journal, p.seq, `is where the effects table puts effect ${p.id} (${p.state}), but the journal ${last ? `has it ${last.state} at record ${last.seq}` : 'has no record of it'}`)
    }
  }
  for (const end of ends.values()) checkEnd(end)
  const out: { snap: EffectSnapshot; journal: string; seq: number }[] = []
  for (const p of projection) {
    const run = runs.get(p.id)!
    const first = run[0]!
    const last = run.at(-1)!
    const proposed = parseRecordData(first.journal, first.seq, first.dataText) as unknown as { effect: EffectSnapshot['effect']; tier: Tier }
    out.push({
      journal: first.journal,
      seq: first.seq,
      snap: {
        effect: proposed.effect,
        tier: proposed.tier,
        state: last.state as State,
        seq: last.seq,
        detail: parseRecordData(last.journal, last.seq, last.dataText),
        createdAt: first.at,
        updatedAt: last.at,
      },
    })
  }
  // Oldest proposal first (ISO-8601 UTC text: text order is time order); ties in journal order.
  out.sort((a, b) =>
    a.snap.createdAt !== b.snap.createdAt ? (a.snap.createdAt < b.snap.createdAt ? -1 : 1) : a.journal !== b.journal ? (a.journal < b.journal ? -1 : 1) : a.seq - b.seq,
  )
  const histories = new Map<string, JournalRecord[]>()
  for (const [id, run] of runs) histories.set(id, run.map((r) => ({ ...asRecord(r), data: parseRecordData(r.journal, r.seq, r.dataText) })))
  return { effects: out.map((o) => o.snap), histories }
}

/** A record removed from the end leaves no gap in the chain, only a head that points past it. */
function checkEnd(end: JournalEnd): void {
  const { journal, head } = end
  if (end.beyond !== null) throw integrity(journal, end.beyond, `lies past the journal's recorded head (record ${head.seq}); it was written behind the store`)
  const found = head.seq === 0 ? GENESIS_HASH : end.atHead
  if (found !== head.hash) {
    throw integrity(journal, head.seq, found === null
      ? `is the journal's recorded head, but there is no such record; records were removed from the end or the head was altered`
      : `is the journal's recorded head, but its hash is not the head's; records were removed from the end or the head was altered`)
  }
}

function asRecord(r: InFlightRow): JournalRecord {
  // ChainVerifier reads `data` only when no text is passed; the text is always passed here.
  return { journal: r.journal, seq: r.seq, effectId: r.effectId, state: r.state as State, at: r.at, data: {}, prevHash: r.prevHash, hash: r.hash }
}
