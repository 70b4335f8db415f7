/**
 * The store as the relay's lifecycle steps see it (advance/dispatch run
 * unchanged on it): every append carries the relay's lease for that effect,
 * so the store refuses it once another relay has claimed the effect, and
 * every COMMITTED record carries the relay's signed receipt.
 *
 * An append for an effect the relay holds no lease on gets a lease no one
 * holds: it loses, instead of slipping through unfenced.
 */
import type { JsonObject } from '../canonical-json.js'
import type { AppendRequest, AppendResult, Store } from '../stores/store.js'
import type { LeaseBook } from './lease-book.js'
import type { ReceiptSigner } from './receipt-signer.js'

export function leasedStore(store: Store, relay: string, book: LeaseBook, signer: ReceiptSigner, now: () => Date): Store {
  const append = (requests: AppendRequest[]): Promise<AppendResult[]> =>
    store.append(
      requests.map((r) => {
        const lease = book.lease(r.effectId) ?? { relay, token: -1 }
        if (r.to !== 'COMMITTED') return { ...r, lease }
        const receipt = (r.data.receipt ?? {}) as JsonObject
        return { ...r, lease, data: { ...r.data, relaySignature: signer.sign(r.effectId, receipt, now().toISOString()) } }
      }),
    )
  // Everything but append goes straight to the store, bound to it (it keeps state of its own).
  return {
    kind: store.kind,
    append,
    get: (id) => store.get(id),
    history: (id) => store.history(id),
    scanInFlight: () => store.scanInFlight(),
    list: (filter) => store.list(filter),
    countByState: () => store.countByState(),
    records: () => store.records(),
    claim: (req) => store.claim(req),
    renewLease: (r, leases, ms) => store.renewLease(r, leases, ms),
    releaseLease: (r, leases) => store.releaseLease(r, leases),
    heartbeat: (r, info) => store.heartbeat(r, info),
    relays: () => store.relays(),
    close: () => store.close(),
  }
}
