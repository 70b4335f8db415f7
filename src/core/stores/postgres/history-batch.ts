/**
 * history() calls that arrive together are answered by one statement.
 *
 * A relay reads the history of every effect before it sends it (relay/
 * send-check.ts), dozens at once as a claimed batch starts. One read per
 * effect would be one round trip (and a pooled connection) each; gathered
 * until the event loop turns (setImmediate, as group-commit gathers appends),
 * they are one `effect_id = ANY($1)` query, with each effect's row joined
 * beside its records. One statement sees one snapshot, so every history is
 * read consistently with its row, as the two-query transaction did.
 *
 * Each history is verified on its own (history-check.ts): one broken journal
 * fails only the callers asking for it. An effect with no record at all is
 * read alone the old way (its row decides whether that is an integrity error).
 */
import { verifyHistory } from '../history-check.js'
import type { JournalRecord } from '../store.js'
import { toHistoryRow, type HistoryRecordRow } from './rows.js'

/** One record of a batched read, with its predecessor's hash and its effect's row (null columns when it has none). */
export interface JoinedRecordRow extends HistoryRecordRow {
  row_journal: string | null
  row_last_seq: string | null
}

/** Most effects in one statement. */
const MAX_BATCH = 256

interface Waiter {
  resolve(records: JournalRecord[]): void
  reject(e: unknown): void
}

export class HistoryBatcher {
  private pending = new Map<string, Waiter[]>()
  private scheduled = false

  constructor(
    /** Every record of these effects, ordered by effect, journal, seq. */
    private readonly readMany: (effectIds: string[]) => Promise<JoinedRecordRow[]>,
    /** One effect's history read alone (used for an effect with no record). */
    private readonly readOne: (effectId: string) => Promise<JournalRecord[]>,
  ) {}

  history(effectId: string): Promise<JournalRecord[]> {
    return new Promise((resolve, reject) => {
      const list = this.pending.get(effectId)
      if (list) list.push({ resolve, reject })
      else this.pending.set(effectId, [{ resolve, reject }])
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => void this.flush())
      }
    })
  }

  private async flush(): Promise<void> {
    this.scheduled = false
    while (this.pending.size > 0) {
      const batch = new Map<string, Waiter[]>()
      for (const [id, waiters] of this.pending) {
        if (batch.size >= MAX_BATCH) break
        batch.set(id, waiters)
      }
      for (const id of batch.keys()) this.pending.delete(id)
      await this.answer(batch)
    }
  }

  private async answer(batch: Map<string, Waiter[]>): Promise<void> {
    let rows: JoinedRecordRow[]
    try {
      rows = await this.readMany([...batch.keys()])
    } catch (e) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(e)
      return
    }
    const byEffect = new Map<string, JoinedRecordRow[]>()
    for (const r of rows) {
      const list = byEffect.get(r.effect_id)
      if (list) list.push(r)
      else byEffect.set(r.effect_id, [r])
    }
    for (const [id, waiters] of batch) {
      const own = byEffect.get(id)
      const settle = own ? Promise.resolve().then(() => verifyOne(id, own)) : this.readOne(id)
      settle.then(
        (records) => waiters.forEach((w) => w.resolve(records)),
        (e: unknown) => waiters.forEach((w) => w.reject(e)),
      )
    }
  }
}

function verifyOne(effectId: string, rows: readonly JoinedRecordRow[]): JournalRecord[] {
  const first = rows[0]!
  const last = first.row_journal === null ? undefined : { journal: first.row_journal, seq: Number(first.row_last_seq) }
  return verifyHistory(effectId, rows.map(toHistoryRow), last)
}
