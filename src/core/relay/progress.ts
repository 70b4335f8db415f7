/**
 * Whether the relay is making progress, for /healthz: alive is not enough. A
 * relay blocked on a lock still answers HTTP and still heartbeats (the
 * heartbeat writes another table), so the health verdict looks at the work:
 *
 * - a store call pending longer than `stallMs` (a lock, a hung connection:
 *   what the store's own timeouts did not end);
 * - no progress for longer than `stallMs` while the relay has work: nothing
 *   claimed, finished or tried. Idle (nothing in flight, the last claim found
 *   nothing) is not a stall. A wait in place that a service asked for
 *   (Retry-After, up to `[gate] max_wait_ms`) is not either, until it is over.
 */
import type { Store } from '../stores/store.js'
import type { FailingCondition } from './conditions.js'

interface Pending {
  what: string
  since: number
}

export interface ProgressView {
  pending?: { what: string; ms: number }
  sinceProgressMs: number
}

export class Progress {
  private readonly pending = new Map<number, Pending>()
  private next = 0
  private lastAt: number
  private quietUntil = 0

  /** @param now monotonic milliseconds */
  constructor(private readonly now: () => number) {
    this.lastAt = now()
  }

  /** Something moved: a claim answered with work (or found none with nothing in flight), an effect finished, a try answered. */
  made(): void {
    this.lastAt = this.now()
  }

  /** A wait asked for by a service: not a stall while it lasts. */
  waiting(ms: number): void {
    this.quietUntil = Math.max(this.quietUntil, this.now() + ms)
  }

  view(): ProgressView {
    const now = this.now()
    let oldest: Pending | undefined
    for (const p of this.pending.values()) if (!oldest || p.since < oldest.since) oldest = p
    return {
      ...(oldest ? { pending: { what: oldest.what, ms: now - oldest.since } } : {}),
      sinceProgressMs: Math.max(0, now - Math.max(this.lastAt, this.quietUntil)),
    }
  }

  /**
   * The store, each call that returns a promise tracked until it settles;
   * `settled` is told each one's name and milliseconds (the relay's
   * store-duration histogram: one wrapper times the calls for both).
   */
  watch(store: Store, settled?: (what: string, ms: number) => void): Store {
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        const v = Reflect.get(target, prop, receiver)
        if (typeof v !== 'function') return v
        return (...args: unknown[]) => {
          const r = (v as (...a: unknown[]) => unknown).apply(target, args)
          if (!isPromise(r)) return r
          const id = this.next++
          const what = String(prop)
          const since = this.now()
          this.pending.set(id, { what, since })
          const done = () => {
            this.pending.delete(id)
            settled?.(what, this.now() - since)
          }
          r.then(done, done)
          return r
        }
      },
    })
  }
}

function isPromise(v: unknown): v is Promise<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === 'function'
}

export type HealthStatus = 'ok' | 'draining' | 'store unreachable' | 'store call pending' | 'store failing' | 'stalled'

export interface HealthInputs {
  stopping: boolean
  view: ProgressView
  /** The longest-failing store operation the work needs, if any. */
  failing?: FailingCondition
  /**
   * Such an operation whose last attempt could not reach the store (a primary
   * dead, a standby not yet promoted): unhealthy at once, not after stallMs,
   * since nothing can be claimed or recorded until it answers again.
   */
  unreachable?: FailingCondition
  /** Nothing in flight and the last claim found nothing. */
  idle: boolean
  stallMs: number
}

/** The /healthz verdict, first reason first. */
export function healthStatus(h: HealthInputs): HealthStatus {
  if (h.stopping) return 'draining'
  if (h.unreachable) return 'store unreachable'
  if (h.view.pending && h.view.pending.ms >= h.stallMs) return 'store call pending'
  if (h.failing && h.failing.failingMs >= h.stallMs) return 'store failing'
  if (!h.idle && h.view.sinceProgressMs >= h.stallMs) return 'stalled'
  return 'ok'
}
