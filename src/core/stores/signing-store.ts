/**
 * The store as a signing writer (a relay, a gate given the relay's key, an
 * operator re-sending an effect) appends to it: every record is signed
 * (crypto/record-signature.ts) over exactly the data the store will journal.
 *
 * It sits after the secrets guard (secrets/redacting-store.ts): what is
 * signed is what is journaled, scrubbed. A proposal is signed over its
 * record's data as the store writes it (append-plan.ts recordData); any
 * other request must say which of the effect's records it follows
 * (`after`, from the writer's snapshot: gate-context.ts transition).
 */
import type { RecordSigner } from '../crypto/record-signature.js'
import { recordData } from './append-plan.js'
import { rewritingStore } from './rewriting-store.js'
import type { Store } from './store.js'

export function signingStore(store: Store, signer: RecordSigner): Store {
  return rewritingStore(store, (requests) =>
    requests.map((r) => {
      if (r.from !== null && r.after === undefined) throw new Error(`a signed append of ${r.from} → ${r.to} for effect ${r.effectId} does not say which record it follows`)
      const data = r.from === null ? recordData(r) : r.data
      return { ...r, data: signer.sign(r.effectId, r.from, r.to, r.from === null ? 0 : r.after!, data) }
    }),
  )
}
