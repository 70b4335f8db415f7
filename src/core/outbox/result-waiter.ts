/**
 * Waiting for effects to settle: one loop for all pending results, woken by
 * the store's "settled" notifications (when it has them) or by a timer, that
 * reads each pending effect's state and resolves those that are done.
 */
import type { EffectSnapshot } from '../effect.js'
import { StoreError } from '../errors.js'
import type { State } from '../lifecycle.js'
import type { Store } from '../stores/store.js'

/** What result() waits for: anything a relay will not move further on its own. */
const DONE: readonly State[] = ['COMMITTED', 'REJECTED', 'FAILED', 'AMBIGUOUS', 'HELD']

interface Pending {
  resolve(s: EffectSnapshot): void
  reject(e: unknown): void
}

export class ResultWaiter {
  private readonly pending = new Map<string, Pending[]>()
  private running: Promise<void> | null = null
  private wake: (() => void) | null = null
  private unsubscribe: Promise<(() => Promise<void>) | null> | null = null
  private closed = false

  constructor(
    private readonly store: Store,
    private readonly pollMs: number,
  ) {}

  wait(effectId: string): Promise<EffectSnapshot> {
    if (this.closed) return Promise.reject(new StoreError('the outbox is closed'))
    return new Promise((resolve, reject) => {
      const list = this.pending.get(effectId) ?? []
      list.push({ resolve, reject })
      this.pending.set(effectId, list)
      this.unsubscribe ??= this.store.subscribe
        ? this.store.subscribe('settled', () => this.wake?.()).catch(() => null)
        : Promise.resolve(null)
      this.running ??= this.loop().finally(() => (this.running = null))
      this.wake?.()
    })
  }

  private async loop(): Promise<void> {
    await this.unsubscribe
    while (this.pending.size > 0 && !this.closed) {
      for (const id of [...this.pending.keys()]) {
        let snap: EffectSnapshot | undefined
        try {
          snap = await this.store.get(id)
        } catch {
          // The store is unreachable for now: keep waiting, look again later.
          break
        }
        if (snap && DONE.includes(snap.state)) {
          for (const p of this.pending.get(id) ?? []) p.resolve(snap)
          this.pending.delete(id)
        }
      }
      if (this.pending.size === 0) break
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.wake = null
          resolve()
        }, this.pollMs)
        this.wake = () => {
          clearTimeout(timer)
          this.wake = null
          resolve()
        }
      })
    }
  }

  async close(): Promise<void> {
    this.closed = true
    this.wake?.()
    for (const list of this.pending.values()) for (const p of list) p.reject(new StoreError('the outbox was closed while a result was awaited'))
    this.pending.clear()
    await this.running
    const unsub = await this.unsubscribe
    await unsub?.().catch(() => {})
  }
}
