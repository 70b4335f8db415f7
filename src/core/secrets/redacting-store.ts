/**
 * The store as a Gate, an Outbox or a Relay writes to it: every append passes
 * through JournalSecrets first (journal-secrets.ts). A proposal whose effect
 * holds a secret where it would be journaled byte for byte is refused before
 * anything is written; every record's data is scrubbed. Everything else goes
 * straight to the store.
 *
 * A Relay puts this in front of its receipt signer, so a receipt is signed as
 * it is journaled.
 */
import type { AppendRequest, AppendResult, Store } from '../stores/store.js'
import type { JournalSecrets } from './journal-secrets.js'

export function redactingStore(store: Store, secrets: JournalSecrets): Store {
  const append = (requests: AppendRequest[]): Promise<AppendResult[]> => {
    if (secrets.empty) return store.append(requests)
    let admitted: AppendRequest[]
    try {
      admitted = requests.map((r) =>
        r.from === null && r.effect ? { ...r, effect: secrets.admit(r.effect), data: secrets.scrub(r.data) } : { ...r, data: secrets.scrub(r.data) },
      )
    } catch (e) {
      return Promise.reject(e)
    }
    return store.append(admitted)
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
