/**
 * Where `outbox prune` may cut each journal: the longest run of records from
 * the journal's start that belongs only to effects settled (COMMITTED,
 * REJECTED, FAILED) before the cutoff, and holds every record of each of
 * them. An effect is never split: one still open (HELD and AMBIGUOUS wait
 * for people), or settled after the cutoff, stops the run at its first
 * record, and so does an earlier effect whose records reach past that.
 *
 * Fed every record in (journal, seq) order (the verify pass's reading), it
 * keeps one small entry per effect.
 */
import { isTerminal, type State } from '../lifecycle.js'
import type { JournalCut, JournalRecord } from '../stores/store.js'

interface Track {
  journal: string
  first: number
  last: number
  lastHash: string
  state: State
  at: string
}

export interface PlannedCut extends JournalCut {
  /** Records the cut removes (every record up to seq, after the journal's current start). */
  records: number
  /** Each pruned effect's last record, for the archive's end line. */
  ends: Map<string, { state: State; seq: number }>
}

export class CutPlanner {
  private readonly effects = new Map<string, Track>()
  /** Per journal, its effects in the order of their first record, and its first record read. */
  private readonly order = new Map<string, { start: number; ids: string[] }>()

  /** @param cutoffMs effects whose settling record is at or after this time (ms since the epoch) are kept */
  constructor(private readonly cutoffMs: number) {}

  add(r: JournalRecord): void {
    let t = this.effects.get(r.effectId)
    if (!t) {
      t = { journal: r.journal, first: r.seq, last: r.seq, lastHash: r.hash, state: r.state, at: r.at }
      this.effects.set(r.effectId, t)
      const o = this.order.get(r.journal)
      if (o) o.ids.push(r.effectId)
      else this.order.set(r.journal, { start: r.seq, ids: [r.effectId] })
      return
    }
    t.last = r.seq
    t.lastHash = r.hash
    t.state = r.state
    t.at = r.at
  }

  cuts(): PlannedCut[] {
    const out: PlannedCut[] = []
    for (const [journal, { start, ids }] of this.order) {
      let reach = -Infinity
      let hash = ''
      let taken = 0
      let cut: PlannedCut | undefined
      for (let i = 0; i < ids.length; i++) {
        const t = this.effects.get(ids[i]!)!
        if (!isTerminal(t.state) || !(Date.parse(t.at) < this.cutoffMs)) break
        if (t.last > reach) {
          reach = t.last
          hash = t.lastHash
        }
        taken = i + 1
        const next = ids[i + 1] === undefined ? Infinity : this.effects.get(ids[i + 1]!)!.first
        // Closed here: every record up to `reach` belongs to the effects taken so far.
        if (reach < next) {
          const prefix = ids.slice(0, taken)
          cut = {
            journal,
            seq: reach,
            hash,
            effectIds: prefix,
            records: reach - start + 1,
            ends: new Map(prefix.map((id) => [id, { state: this.effects.get(id)!.state, seq: this.effects.get(id)!.last }])),
          }
        }
      }
      if (cut) out.push(cut)
    }
    return out.sort((a, b) => (a.journal < b.journal ? -1 : a.journal > b.journal ? 1 : 0))
  }
}

/** The records as they pass, each shown to the planner first (the verify pass's reading plans the cuts). */
export async function* planning(records: AsyncIterable<JournalRecord>, planner: CutPlanner): AsyncIterable<JournalRecord> {
  for await (const r of records) {
    planner.add(r)
    yield r
  }
}
