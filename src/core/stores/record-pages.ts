/**
 * Store.records() for both stores: every record in (journal, seq) order, a
 * page at a time (the connection stays free for appends between pages), and
 * for a journal given a starting point, only the records past it: the reading
 * jumps over what lies before instead of reading it (`outbox checkpoint`
 * verifies each journal from its last pin on, outbox/checkpoint.ts).
 *
 * Rows become records one at a time, as they are yielded: a record whose data
 * no longer parses fails the reading there, after every record before it.
 */
import { BEFORE_ANY_SEQ, type JournalRecord } from './store.js'

/** A store's raw record row: journal first, seq second (PostgreSQL sends int8 as text). */
export type RawRecordRow = readonly [string, number | string, ...unknown[]]

/** Reads up to `limit` rows after (journal, seq) in (journal, seq) order. */
export type RecordPage<R extends RawRecordRow> = (journal: string, seq: number, limit: number) => Promise<readonly R[]> | readonly R[]

export async function* recordPages<R extends RawRecordRow>(
  page: RecordPage<R>,
  toRecord: (row: R) => JournalRecord,
  pageSize: number,
  after?: ReadonlyMap<string, number>,
): AsyncIterable<JournalRecord> {
  let at: [string, number] = ['', BEFORE_ANY_SEQ]
  for (;;) {
    const rows = await page(at[0], at[1], pageSize)
    let jumped = false
    for (const row of rows) {
      const journal = row[0]
      const seq = Number(row[1])
      const from = after?.get(journal)
      if (from !== undefined && seq <= from) {
        // A journal to be read from a later point: go straight there.
        at = [journal, from]
        jumped = true
        break
      }
      yield toRecord(row)
      at = [journal, seq]
    }
    if (!jumped && rows.length < pageSize) return
  }
}
