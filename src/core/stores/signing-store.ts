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
import type { AppendRequest, AppendResult, Store } from './store.js'

export function signingStore(store: Store, signer: RecordSigner): Store {
  const append = (requests: AppendRequest[]): Promise<AppendResult[]> => {
    let signed: AppendRequest[]
    try {
      signed = requests.map((r) => {
        if (r.from !== null && r.after === undefined) throw new Error(`a signed append of ${r.from} → ${r.to} for effect ${r.effectId} does not say which record it follows`)
        const data = r.from === null ? recordData(r) : r.data
        return { ...r, data: signer.sign(r.effectId, r.from, r.to, r.from === null ? 0 : r.after!, data) }
      })
    } catch (e) {
      return Promise.reject(e)
    }
    return store.append(signed)
  }
  // Only append changes; every other member is the store's own, bound to it (stores keep private state).
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') return append
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
