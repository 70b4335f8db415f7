/**
 * Staying out of a live relay's way. Before acting, reconcile claims the
 * ready effects (PROPOSED, AUTHORIZED, DISPATCHED) as a relay of its own:
 * the store hands out only effects whose lease is free or expired, so an
 * effect a live relay holds is never touched, and while reconcile holds a
 * lease no relay takes the effect from under it. Effects it will not act on
 * (too recent, over the limit) are given back at once; the ones it could not
 * finish are given back at the end, so a relay can pick them up immediately.
 *
 * HELD effects are claimed too: one whose recorded releases already form a
 * quorum (a crash after the completing release) is authorized here and
 * dispatched under reconcile's lease, so no relay claims it in between; the
 * held effects that wait for operators are given back before any work starts,
 * and an operator's release never needs a lease.
 *
 * Reconcile's lease is long (LEASE_MS) rather than renewed, and its journal
 * writes do not carry its fencing token (the inline gate writes unfenced).
 * What keeps a reconcile stalled past its lease (a stopped cron job) from
 * sending what a relay has taken over since is `live`: the same check a
 * relay makes, asked before every apply and by the target right before its
 * write (targets/fence.ts), against a deadline taken from the monotonic clock
 * before the claim was sent. Its late journal writes can still land, as an
 * inline gate's would; they cannot make the target apply twice.
 */
import { hostname } from 'node:os'
import type { EffectSnapshot } from '../effect.js'
import type { State } from '../lifecycle.js'
import { READY_STATES, type LeaseRef, type Store } from '../stores/store.js'

export const LEASE_MS = 15 * 60_000
const CLAIM_ALL = 1_000_000
const CLAIMED_STATES: readonly State[] = [...READY_STATES, 'HELD']

export interface ReconcileClaims {
  /** False for a ready or HELD effect someone else holds; AMBIGUOUS effects (only ever waiting) pass. */
  mayTouch(snap: EffectSnapshot): boolean
  heldIds(): string[]
  /** Gives back the leases of the effects in `ids`. */
  giveBack(ids: Iterable<string>): Promise<void>
  /** Gives back every lease still held. */
  releaseAll(): Promise<void>
  /** True while the effect's lease is ours by the local, conservative deadline. */
  live(effectId: string): boolean
}

/** Margin kept between the local deadline and the store's expiry. */
const MARGIN_MS = 60_000

export async function claimForReconcile(store: Store, monotonic: () => number = () => performance.now()): Promise<ReconcileClaims> {
  const relay = `reconcile-effects:${hostname()}:${process.pid}`
  const held = new Map<string, LeaseRef>()
  // Taken before the claims are sent, so the local deadline always runs out before the store's.
  const deadline = monotonic() + LEASE_MS - MARGIN_MS
  // Two claims, so the ready one keeps using the store's partial index of ready effects.
  for (const states of [READY_STATES, ['HELD'] as const]) {
    for (const c of await store.claim({ relay, limit: CLAIM_ALL, leaseMs: LEASE_MS, states })) {
      held.set(c.snapshot.effect.id, { effectId: c.snapshot.effect.id, token: c.lease.token })
    }
  }
  const giveBack = async (ids: Iterable<string>) => {
    const refs = [...ids].flatMap((id) => (held.has(id) ? [held.get(id)!] : []))
    for (const r of refs) held.delete(r.effectId)
    if (refs.length > 0) await store.releaseLease(relay, refs)
  }
  return {
    mayTouch: (snap) => !CLAIMED_STATES.includes(snap.state) || held.has(snap.effect.id),
    heldIds: () => [...held.keys()],
    giveBack,
    releaseAll: () => giveBack([...held.keys()]),
    live: (id) => held.has(id) && monotonic() < deadline,
  }
}
