/**
 * Reading a record's stored data text back. The text is what the hash
 * covers; a byte flipped in it (a damaged disk, a hand edit) may leave text
 * that no longer parses, and the chain may even have been recomputed over
 * it. Either way that is the journal's integrity, not a bug: an
 * IntegrityError (exit 5) naming the journal and the record, never a bare
 * SyntaxError.
 */
import type { JsonObject } from '../canonical-json.js'
import { IntegrityError } from '../errors.js'

export function parseRecordData(journal: string, seq: number, text: string): JsonObject {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (e) {
    throw integrity(journal, seq, `has data that is not JSON (${(e as Error).message}); the record was altered or damaged`)
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw integrity(journal, seq, 'has data that is not a JSON object; the record was altered or damaged')
  return v as JsonObject
}

/** An `effects` row's JSON column (SQLite keeps it as text), read back the same way. */
export function parseEffectColumn(effectId: string, column: string, text: string): JsonObject {
  try {
    const v = JSON.parse(text) as unknown
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as JsonObject
  } catch {
    // Reported below, with the row named.
  }
  throw new IntegrityError(`the effects row of effect ${effectId}: its ${column} column is not a JSON object; the row was altered or damaged`, {
    hint: 'Run `interlock outbox verify` to see every problem; restore the journal from a backup before resuming.',
    context: { effectId, column },
  })
}

/** An IntegrityError naming one journal record. */
export function integrity(journal: string, seq: number, what: string): IntegrityError {
  return new IntegrityError(`journal ${JSON.stringify(journal)} record ${seq} ${what}`, {
    hint: 'Run `interlock outbox verify` to see every problem; restore the journal from a backup before resuming.',
    context: { journal, seq },
  })
}
