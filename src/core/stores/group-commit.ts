/**
 * Group commit: a Store decorator that turns many concurrent `append` calls
 * into one underlying `append` (one transaction, one fsync).
 *
 * Each durable step of an effect costs an fsync; with 64 agents submitting at
 * once, paying one per caller makes the disk the bottleneck. Callers that
 * arrive while a flush is scheduled or running wait for the next flush and
 * go in together. Requests are applied in arrival order, so two callers racing
 * on one effect still get compare-and-set semantics: the first wins, the
 * second gets `{ ok: false, current }`.
 *
 * Flushes start on setImmediate, not at once: the SQLite driver is
 * synchronous, so without that pause the first caller of a tick would commit
 * alone before the others had even queued.
 *
 * Failure: if the batch's transaction fails, every caller in it is rejected
 * with the same error (nothing of the batch was written). A caller's own bug
 * (an illegal transition, or a request the store refuses: Store.checkAppend)
 * is found before it joins a batch and fails only it.
 */
import { StoreError } from '../errors.js'
import { validateAppendRequests } from './append-plan.js'
import type { JsonObject } from '../canonical-json.js'
import type {
  AppendRequest,
  AppendResult,
  ClaimedEffect,
  ClaimRequest,
  InFlightScan,
  JournalRecord,
  LeaseRef,
  ListFilter,
  RelayHeartbeat,
  Store,
  PruneRequest,
  PruneResult,
  ReadScope,
  StoredCheckpoint,
} from './store.js'
import type { EffectSnapshot } from '../effect.js'
import type { StoredSeal } from '../crypto/seal.js'
import type { State } from '../lifecycle.js'

export interface GroupCommitOptions {
  /** Most requests in one transaction; later callers wait for the next (default 1000). A single larger call still goes alone. */
  maxBatch?: number
  /** When to start a flush (default setImmediate); injected by tests. */
  schedule?: (flush: () => void) => void
}

interface Waiting {
  requests: AppendRequest[]
  resolve(results: AppendResult[]): void
  reject(error: unknown): void
}

export function withGroupCommit(store: Store, options: GroupCommitOptions = {}): Store {
  return new GroupCommitStore(store, options)
}

class GroupCommitStore implements Store {
  readonly kind: Store['kind']
  private readonly maxBatch: number
  private readonly schedule: (flush: () => void) => void
  private queue: Waiting[] = []
  private scheduled = false
  private flushing: Promise<void> | null = null
  private closed = false

  constructor(
    private readonly inner: Store,
    options: GroupCommitOptions,
  ) {
    this.kind = inner.kind
    this.maxBatch = Math.max(1, options.maxBatch ?? 1000)
    this.schedule = options.schedule ?? ((flush) => setImmediate(flush))
    if (inner.subscribe) this.subscribe = (event, listener) => inner.subscribe!(event, listener)
    if (inner.checkAppend) this.checkAppend = (requests) => inner.checkAppend!(requests)
  }

  subscribe?: Store['subscribe']
  checkAppend?: Store['checkAppend']

  async append(requests: AppendRequest[]): Promise<AppendResult[]> {
    if (this.closed) throw new StoreError('the store is closed')
    validateAppendRequests(requests)
    this.inner.checkAppend?.(requests)
    if (requests.length === 0) return []
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.queue.push({ requests, resolve, reject })
      this.kick()
    })
  }

  private kick(): void {
    if (this.scheduled || this.flushing) return
    this.scheduled = true
    this.schedule(() => {
      this.scheduled = false
      this.flushing = this.flush().finally(() => {
        this.flushing = null
        if (this.queue.length > 0) this.kick()
      })
    })
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.take()
      try {
        const results = await this.inner.append(batch.flatMap((w) => w.requests))
        let offset = 0
        for (const w of batch) {
          w.resolve(results.slice(offset, offset + w.requests.length))
          offset += w.requests.length
        }
      } catch (e) {
        for (const w of batch) w.reject(e)
      }
    }
  }

  /** The callers that fit in one transaction, in arrival order (at least one). */
  private take(): Waiting[] {
    let n = 0
    let size = 0
    while (n < this.queue.length && (n === 0 || size + this.queue[n]!.requests.length <= this.maxBatch)) {
      size += this.queue[n]!.requests.length
      n++
    }
    return this.queue.splice(0, n)
  }

  get(effectId: string): Promise<EffectSnapshot | undefined> {
    return this.inner.get(effectId)
  }

  history(effectId: string): Promise<JournalRecord[]> {
    return this.inner.history(effectId)
  }

  scanInFlight(): Promise<InFlightScan> {
    return this.inner.scanInFlight()
  }

  list(filter?: ListFilter): Promise<EffectSnapshot[]> {
    return this.inner.list(filter)
  }

  records(after?: ReadonlyMap<string, number>): AsyncIterable<JournalRecord> {
    return this.inner.records(after)
  }

  countByState(states?: readonly State[]): Promise<Record<State, number>> {
    return this.inner.countByState(states)
  }

  claim(request: ClaimRequest): Promise<ClaimedEffect[]> {
    return this.inner.claim(request)
  }

  renewLease(relay: string, leases: readonly LeaseRef[], leaseMs: number): Promise<string[]> {
    return this.inner.renewLease(relay, leases, leaseMs)
  }

  releaseLease(relay: string, leases: readonly LeaseRef[]): Promise<void> {
    return this.inner.releaseLease(relay, leases)
  }

  heartbeat(relay: string, info: JsonObject): Promise<void> {
    return this.inner.heartbeat(relay, info)
  }

  relays(): Promise<RelayHeartbeat[]> {
    return this.inner.relays()
  }

  checkpoints(): Promise<StoredCheckpoint[]> {
    return this.inner.checkpoints()
  }

  seals(at?: readonly string[]): Promise<StoredSeal[]> {
    return this.inner.seals(at)
  }

  prune(request: PruneRequest): Promise<PruneResult> {
    return this.inner.prune(request)
  }

  forgetRelays(olderThanMs: number): Promise<number> {
    return this.inner.forgetRelays(olderThanMs)
  }

  rememberRead(scope: ReadScope, read: string, digest: string): Promise<void> {
    return this.inner.rememberRead(scope, read, digest)
  }

  recallRead(scope: ReadScope, read: string): Promise<string | undefined> {
    return this.inner.recallRead(scope, read)
  }

  /** Lets queued appends finish, then closes the store beneath. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    while (this.scheduled || this.flushing || this.queue.length > 0) {
      await (this.flushing ?? new Promise((resolve) => setImmediate(resolve)))
    }
    await this.inner.close()
  }
}
