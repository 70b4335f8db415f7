/**
 * How signing writers appended before seals (sealing-store.ts), kept so
 * journals in that form can still be written by tests and checked by
 * `outbox verify`. The store as a signing writer (a relay, a gate given the relay's key, an
 * operator re-sending an effect) appends to it: every record is signed
 * (crypto/record-signature.ts) over exactly the data the store will journal.
 *
 * It sits after the secrets guard (secrets/redacting-store.ts): what is
 * signed is what is journaled, scrubbed. A proposal is signed over its
 * record's data as the store writes it (append-plan.ts recordData). Every
 * other record is signed as following the effect's record before it
 * (record-signature.ts followsOf): for a request chained to the one before
 * it, that one's record, signed just now; otherwise the record the writer
 * read last (`after`, its snapshot's detail: gate-context.ts transition).
 */
import { followsOf, type RecordSigner } from '../crypto/record-signature.js'
import type { JsonObject } from '../canonical-json.js'
import { recordData } from './append-plan.js'
import { rewritingStore } from './rewriting-store.js'
import type { Store } from './store.js'

export function signingStore(store: Store, signer: RecordSigner): Store {
  return rewritingStore(store, (requests) => {
    let previous: JsonObject | undefined
    return requests.map((r) => {
      const before = r.chained ? previous : r.after
      if (r.from !== null && before === undefined) throw new Error(`a signed append of ${r.from} → ${r.to} for effect ${r.effectId} does not say which record it follows`)
      const data = r.from === null ? recordData(r) : r.data
      const signed = signer.sign(r.effectId, r.from, r.to, r.from === null ? null : followsOf(before!), data)
      previous = signed
      return { ...r, data: signed }
    })
  })
}
