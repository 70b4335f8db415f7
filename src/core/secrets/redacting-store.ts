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
import { rewritingStore } from '../stores/rewriting-store.js'
import type { Store } from '../stores/store.js'
import type { JournalSecrets } from './journal-secrets.js'

export function redactingStore(store: Store, secrets: JournalSecrets): Store {
  return rewritingStore(store, (requests) =>
    secrets.empty
      ? requests
      : requests.map((r) =>
          r.from === null && r.effect ? { ...r, effect: secrets.admit(r.effect), data: secrets.scrub(r.data) } : { ...r, data: secrets.scrub(r.data) },
        ),
  )
}
