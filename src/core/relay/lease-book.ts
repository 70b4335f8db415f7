/**
 * The leases one relay holds, with a local deadline for each.
 *
 * The store decides who holds a lease (its fencing token, checked in every
 * append). The local deadline is the relay's own, conservative view: taken
 * from the monotonic clock *before* the claim or renewal was sent, minus a
 * safety margin, so it always runs out before the store's expiry does. The
 * monotonic clock keeps running while the process is stopped (SIGSTOP), so a
 * relay that wakes past its deadline knows at once that it may have been
 * replaced, without asking the store.
 */
import type { ClaimedEffect, Lease, LeaseRef } from '../stores/store.js'

interface Held {
  lease: Lease
  deadline: number
}

export class LeaseBook {
  private readonly held = new Map<string, Held>()

  constructor(
    private readonly leaseMs: number,
    private readonly now: () => number,
  ) {}

  /** Margin kept between the local deadline and the store's expiry. */
  get marginMs(): number {
    return Math.min(this.leaseMs / 5, 2_000)
  }

  add(claimed: ClaimedEffect, sentAt: number): void {
    this.held.set(claimed.snapshot.effect.id, { lease: claimed.lease, deadline: sentAt + this.leaseMs - this.marginMs })
  }

  lease(effectId: string): Lease | undefined {
    return this.held.get(effectId)?.lease
  }

  /** True while the lease is ours by the local, conservative deadline. */
  live(effectId: string): boolean {
    const h = this.held.get(effectId)
    return h !== undefined && this.now() < h.deadline
  }

  /** After a renewal sent at `sentAt`: extend what the store renewed, mark the rest lost; returns the effects newly lost. */
  renewed(asked: readonly LeaseRef[], kept: readonly string[], sentAt: number): string[] {
    const ok = new Set(kept)
    const lost: string[] = []
    for (const ref of asked) {
      const h = this.held.get(ref.effectId)
      if (!h || h.lease.token !== ref.token) continue
      if (ok.has(ref.effectId)) h.deadline = sentAt + this.leaseMs - this.marginMs
      else if (h.deadline !== -Infinity) {
        h.deadline = -Infinity
        lost.push(ref.effectId)
      }
    }
    return lost
  }

  remove(effectId: string): void {
    this.held.delete(effectId)
  }

  refs(): LeaseRef[] {
    return [...this.held].map(([effectId, h]) => ({ effectId, token: h.lease.token }))
  }

  get size(): number {
    return this.held.size
  }
}
