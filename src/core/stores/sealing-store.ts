/**
 * The store as a sealing writer appends to it (a relay, a gate given the
 * relay's key, an operator re-sending an effect): every request carries the
 * writer's sealer, and the store seals each commit's records in the commit
 * (crypto/seal.ts). Group commit joins many of the writer's calls into one
 * transaction, and so into one seal: one signature per commit, not per record.
 *
 * It sits after the secrets guard (secrets/redacting-store.ts): what is
 * sealed is what is journaled, scrubbed.
 */
import type { Sealer } from '../crypto/seal.js'
import { rewritingStore } from './rewriting-store.js'
import type { Store } from './store.js'

export function sealingStore(store: Store, sealer: Sealer): Store {
  return rewritingStore(store, (requests) => requests.map((r) => ({ ...r, sealer })))
}
