/**
 * The store as the relay's lifecycle steps see it (advance/dispatch run
 * unchanged on it): every append carries the relay's lease for that effect,
 * so the store refuses it once another relay has claimed the effect. (What
 * the relay writes is signed before it gets here: relay-signer.ts.)
 *
 * An append for an effect the relay holds no lease on gets a lease no one
 * holds: it loses, instead of slipping through unfenced.
 */
import type { AppendRequest, AppendResult, Lease, Store } from '../stores/store.js'

/**
 * `leaseOf` names the lease an append for an effect carries: the one of the
 * claim the caller is working from (relay.ts), so that the work of an older
 * claim of the same effect can never write with a newer claim's token.
 */
export function leasedStore(
  store: Store,
  relay: string,
  leaseOf: (effectId: string) => Lease | undefined,
  /** Told of each append refused because another writer moved the effect first (or took its lease). */
  onRefused?: (effectId: string) => void,
): Store {
  const append = async (requests: AppendRequest[]): Promise<AppendResult[]> => {
    const results = await store.append(requests.map((r) => ({ ...r, lease: leaseOf(r.effectId) ?? { relay, token: -1 } })))
    results.forEach((r, i) => {
      if (!r.ok) onRefused?.(requests[i]!.effectId)
    })
    return results
  }
  // Everything but append goes straight to the store, bound to it (it keeps state of its own).
  return {
    kind: store.kind,
    append,
    get: (id) => store.get(id),
    history: (id) => store.history(id),
    scanInFlight: () => store.scanInFlight(),
    list: (filter) => store.list(filter),
    countByState: (states) => store.countByState(states),
    records: (after) => store.records(after),
    claim: (req) => store.claim(req),
    renewLease: (r, leases, ms) => store.renewLease(r, leases, ms),
    releaseLease: (r, leases) => store.releaseLease(r, leases),
    heartbeat: (r, info) => store.heartbeat(r, info),
    relays: () => store.relays(),
    checkpoints: () => store.checkpoints(),
    seals: (at) => store.seals(at),
    prune: (request) => store.prune(request),
    forgetRelays: (ms) => store.forgetRelays(ms),
    rememberRead: (scope, read, digest) => store.rememberRead(scope, read, digest),
    recallRead: (scope, read) => store.recallRead(scope, read),
    close: () => store.close(),
  }
}
