/**
 * Staying out of a live relay's way, and out of its store. Reconcile first
 * reads (recovery's one read of what is in flight) and decides what it will act on: past
 * the grace period, within the limit, not waiting for operators. Only then
 * does it lease those, by id, as a relay of its own: the store hands out only
 * effects whose lease is free or expired, so an effect a live relay holds is
 * never touched, and while reconcile holds a lease no relay takes the effect
 * from under it. An effect that changed between the read and the lease (a
 * relay moved it meanwhile) is given back at once and left for the next run.
 * A run with nothing to act on writes nothing.
 *
 * HELD effects whose recorded releases already form a quorum (a crash after
 * the completing release) are leased too, and authorized and dispatched under
 * reconcile's lease, so no relay claims one in between. HELD effects that
 * wait for operators are not leased: an operator's release needs none.
 *
 * Reconcile's lease is long (LEASE_MS) rather than renewed, and its journal
 * writes do not carry its fencing token (the inline gate writes unfenced).
 * What keeps a reconcile stalled past its lease (a stopped cron job) from
 * sending what a relay has taken over since is `live`: the same check a
 * relay makes, asked before every apply and by the target right before its
 * write (targets/fence.ts), against a deadline taken from the monotonic clock
 * before the lease was asked for. Its late journal writes can still land, as
 * an inline gate's would; they cannot make the target apply twice.
 */
import { hostname } from 'node:os'
import type { EffectSnapshot } from '../effect.js'
import type { State } from '../lifecycle.js'
import { READY_STATES, type LeaseRef, type Store } from '../stores/store.js'

export const LEASE_MS = 15 * 60_000
const LEASED_STATES: readonly State[] = [...READY_STATES, 'HELD']

export interface ReconcileClaims {
  /** Leases the effects given (those it will act on); answers the ids it now holds, each still as it was read. */
  take(acting: readonly EffectSnapshot[]): Promise<ReadonlySet<string>>
  /** Gives back every lease still held. */
  releaseAll(): Promise<void>
  /** True while the effect's lease is ours by the local, conservative deadline. */
  live(effectId: string): boolean
}

/** Margin kept between the local deadline and the store's expiry. */
const MARGIN_MS = 60_000

export function reconcileClaims(store: Store, monotonic: () => number = () => performance.now()): ReconcileClaims {
  const relay = `reconcile-effects:${hostname()}:${process.pid}`
  const held = new Map<string, LeaseRef>()
  let deadline = -Infinity
  const giveBack = async (refs: LeaseRef[]) => {
    for (const r of refs) held.delete(r.effectId)
    if (refs.length > 0) await store.releaseLease(relay, refs)
  }
  return {
    async take(acting) {
      const wanted = acting.filter((s) => LEASED_STATES.includes(s.state))
      if (wanted.length === 0) return new Set()
      // Taken before the claim is sent, so the local deadline always runs out before the store's.
      deadline = monotonic() + LEASE_MS - MARGIN_MS
      const read = new Map(wanted.map((s) => [s.effect.id, s]))
      const claimed = await store.claim({ relay, limit: wanted.length, leaseMs: LEASE_MS, states: LEASED_STATES, ids: [...read.keys()] })
      const changed: LeaseRef[] = []
      for (const c of claimed) {
        const ref = { effectId: c.snapshot.effect.id, token: c.lease.token }
        held.set(ref.effectId, ref)
        const before = read.get(ref.effectId)
        if (!before || before.seq !== c.snapshot.seq || before.state !== c.snapshot.state) changed.push(ref)
      }
      await giveBack(changed)
      return new Set(held.keys())
    },
    releaseAll: () => giveBack([...held.values()]),
    live: (id) => held.has(id) && monotonic() < deadline,
  }
}
