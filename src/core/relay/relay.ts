/**
 * The relay: drains the outbox. Claims ready effects with leases, carries
 * each one through the gate's own lifecycle steps (advance/dispatch: premises
 * re-checked, DISPATCHED made durable before apply, outcome recorded) with at
 * most `concurrency` effects per target at once, seals every commit it
 * makes (crypto/seal.ts), renews its leases and heartbeats, and on
 * stop() drains: claims nothing more, finishes what it started, gives back
 * what it had not started.
 *
 * An effect the service asked to wait for longer than the gate waits in place
 * (an outcome with `notBefore`, e.g. returned to AUTHORIZED: returned.ts) frees
 * its concurrency slot at once; its lease is parked rather than held: renewed
 * once to last until notBefore, then forgotten (never renewed again). No relay
 * can claim it before then, and if this relay dies the lease still runs out
 * then.
 *
 * The relay is the trusted side of the outbox (docs/design.md, "The trust boundary"):
 * agents only propose; the relay applies the operators' policy from its own
 * config, and before it works on an effect it reads the effect's verified
 * journal and goes on from that, never from the mutable row: a row that
 * disagrees with its journal, or an authorization the journal does not back
 * (send-check.ts), is refused, reported and parked, and nothing is sent.
 *
 * What it says: one log line per effect outcome, per retry, lost lease,
 * fence, refusal and return (relay-log.ts); a failing store operation once,
 * then a reminder while it lasts, then its recovery (conditions.ts). Whether
 * it makes progress, not only whether it runs, is what /healthz answers
 * (progress.ts).
 *
 * Why several relays never dispatch one effect twice: see README.md here.
 */
import { ROOT_CONTEXT, type MeterProvider } from '@opentelemetry/api'
import { contextOfTrace, effectAttributes, inSpan } from '../tracing/spans.js'
import { AsyncLocalStorage } from 'node:async_hooks'
import { hostname } from 'node:os'
import { advance } from '../advance.js'
import type { JsonObject } from '../canonical-json.js'
import type { OperatorConfig } from '../config/types.js'
import type { EffectSnapshot } from '../effect.js'
import type { KeyPair } from '../crypto/keys.js'
import { InputError, IntegrityError } from '../errors.js'
import { transition, type DispatchEvent, type GateContext, type RetryOptions } from '../gate-context.js'
import { DEFAULT_RETRY } from '../gate.js'
import type { SubmitOutcome } from '../outcome.js'
import type { RuleSource } from '../outbox/release-check.js'
import type { Hold, Policy } from '../policy.js'
import { sealingStore } from '../stores/sealing-store.js'
import { sealer } from '../crypto/seal.js'
import type { ClaimedEffect, Lease, Store, StoreEvent } from '../stores/store.js'
import { assertTarget, type EffectTarget } from '../targets/target.js'
import { requirePolicy } from '../policy/required.js'
import { JournalSecrets } from '../secrets/journal-secrets.js'
import { redactingStore } from '../secrets/redacting-store.js'
import { Conditions } from './conditions.js'
import { startHealthServer, type HealthServer } from './health-server.js'
import { LeaseBook } from './lease-book.js'
import { leasedStore } from './leased-store.js'
import { RelayMetrics, WAITING_STATES } from './metrics.js'
import { bridgeRelayMetrics, type MetricsBridge } from './otel-metrics.js'
import { Notifier, type NotifierOptions } from '../notify/notifier.js'
import { Outbox } from '../outbox/outbox.js'
import { healthStatus, Progress } from './progress.js'
import { RelayLog, secondsText, type LogFormat } from './relay-log.js'
import { checkBeforeSend, heldAgainData, type RefusalKind, type SendAuthority, type SendCheck } from './send-check.js'

export interface RelayOptions {
  store: Store
  targets: Iterable<EffectTarget>
  /** Names this relay in leases, heartbeats and receipts. */
  relayId: string
  /** Seals every commit the relay makes: one signature over the hashes of the records it wrote (crypto/seal.ts). */
  key: KeyPair
  /**
   * The operators' policy ([[policy.rules]] of the relay's interlock.toml, as
   * RulesPolicy): the relay, not the agent, decides what is held. Required, so
   * a relay built without it cannot authorize what the config holds; a config
   * without rules passes `new RulesPolicy([])`.
   */
  policy: Policy & RuleSource
  /** The trusted [[operators]], whose journaled releases let a held effect go (default none: nothing held is sent). */
  operators?: readonly OperatorConfig[]
  /** How long an effect refused before sending stays leased here, untouched, before it is looked at again (default 10 min). */
  parkMs?: number
  retry?: Partial<RetryOptions>
  /** Most effects in flight per target (default 32). */
  concurrency?: number
  /** Lease length (default 30 s); renewed every third of it while work runs. */
  leaseMs?: number
  /** Longest wait between claims when nothing wakes the relay (default 1 s). */
  pollMs?: number
  /** Serve /healthz and /metrics on this port of 127.0.0.1 (0: any free port; undefined: none). */
  healthPort?: number
  healthHost?: string
  /**
   * Where the OpenTelemetry copy of the metrics goes (otel-metrics.ts): the
   * global meter provider by default, a no-op until an SDK registers one.
   */
  meterProvider?: MeterProvider
  /** Monotonic milliseconds (default performance.now). */
  monotonic?: () => number
  now?: () => Date
  sleep?: (ms: number) => Promise<void>
  /** Where log lines go: one per effect outcome, retry, lost lease, refusal, failing or recovered store operation…; secrets scrubbed. */
  log?: (line: string) => void
  /** "text" (default) or "json": one JSON object per line (relay-log.ts). */
  logFormat?: LogFormat
  /** /healthz is 503 after this long without progress while there is work, or with a store call pending (default 20 s). */
  stallMs?: number
  /** While a store operation keeps failing, a reminder at most this often (default 60 s). */
  reminderMs?: number
  /** Heartbeat rows of relays not seen for this long are deleted by this relay's heartbeat (default 7 days). */
  heartbeatRetentionMs?: number
  /** Values never to journal or log, besides those targets from interlock.toml bring along (secrets/journal-secrets.ts). */
  secrets?: readonly string[]
  /**
   * [[notify]]: the rules and what they name; every `notifyEveryMs` (default
   * 2 s) a pass journals the notices owed (notify/notifier.ts), which this
   * relay then sends like any effect.
   */
  notify?: NotifierOptions['config']
  notifyEveryMs?: number
}

export interface RelayStats {
  relay: string
  claimed: number
  finished: number
  byStatus: Partial<Record<SubmitOutcome['status'], number>>
  leasesLost: number
  storeErrors: number
  /** Effects refused before sending (their row disagreed with their journal, or their authorization did not stand). */
  refused: number
}

/** One effect refused before sending, as `outbox status` shows it (from the heartbeat). */
export interface Refusal {
  effectId: string
  target: string
  kind: RefusalKind
  reasons: string[]
  at: string
}

const MAX_BACKOFF_MS = 5_000
/** Refusals the heartbeat carries (the latest). */
const REFUSALS_SHOWN = 20
/** How often, at most, the heartbeat deletes the rows of relays gone longer than the retention. */
const FORGET_EVERY_MS = 10 * 60_000
/** How often, at most, the heartbeat counts the store's HELD and AMBIGUOUS effects for /metrics. */
const COUNT_WAITING_EVERY_MS = 2_000
/** The store operations whose failing makes the relay unhealthy (the heartbeat's or forgetting's alone does not stop the work). */
const WORK_CONDITIONS = ['claim', 'renew', 'work', 'release', 'park']

/** One claim being worked on, in its async context (leaseOf, lost). */
interface Work {
  effectId: string
  target: string
  lease: Lease
  /** Set once an append for it was refused or its lease was found gone: the effect is another's now. */
  lost: boolean
}

export class Relay {
  readonly metrics = new RelayMetrics()
  private readonly store: Store
  private readonly targets = new Map<string, EffectTarget>()
  private readonly ctx: GateContext
  private readonly authority: SendAuthority
  private readonly parkMs: number
  private readonly refusals = new Map<string, Refusal>()
  private readonly book: LeaseBook
  private readonly concurrency: number
  private readonly leaseMs: number
  private readonly pollMs: number
  private readonly monotonic: () => number
  private readonly now: () => Date
  private readonly log: RelayLog
  private readonly conditions: Conditions
  private readonly progress: Progress
  private readonly stallMs: number
  private readonly retentionMs: number
  private readonly queues = new Map<string, ClaimedEffect[]>()
  /** The claim the work in an async context works from (leaseOf). */
  private readonly working = new AsyncLocalStorage<Work>()
  private readonly running = new Map<string, number>()
  private readonly work = new Set<Promise<void>>()
  private stopping = false
  private loop: Promise<void> | null = null
  private wake: (() => void) | null = null
  private timers: NodeJS.Timeout[] = []
  private unsubscribe: (() => Promise<void>) | null = null
  private health: HealthServer | null = null
  private otel: MetricsBridge | null = null
  /** The last claim answered and found nothing: with nothing in flight, the relay is idle, not stalled. */
  private lastClaimFoundNothing = false
  /** The highest fencing token this relay's claims were given (noticeRewind). */
  private highestToken = -Infinity
  private lastForgetAt = -Infinity
  private lastWaitingCountAt = -Infinity
  private counting: Promise<void> | null = null
  private readonly startedAt: string

  constructor(private readonly opts: RelayOptions) {
    this.monotonic = opts.monotonic ?? (() => performance.now())
    this.progress = new Progress(this.monotonic)
    // Every call the relay makes to the store, its lifecycle steps' included, is timed for /healthz and /metrics.
    this.store = this.progress.watch(opts.store, (operation, ms) => this.metrics.storeCall(operation, ms / 1000))
    for (const t of opts.targets) {
      assertTarget(t)
      this.targets.set(t.name, t)
    }
    requirePolicy('this Relay', this.targets.values(), opts.policy)
    // Targets made by hand carry no config: the relay still needs rules to judge by, even none.
    if (typeof opts.policy?.evaluate !== 'function' || typeof opts.policy.rule !== 'function') {
      throw new InputError('a relay needs the operators\' policy: it decides what is held, the agents only propose', {
        hint: 'Pass policy: new RulesPolicy(config.policy.rules) (an empty list when the config has no rules), or build it with openInterlock().',
      })
    }
    this.authority = { policy: opts.policy, operators: opts.operators ?? [] }
    this.parkMs = Math.max(1, opts.parkMs ?? 10 * 60_000)
    const secrets = JournalSecrets.of(this.targets.values(), opts.secrets)
    this.concurrency = Math.max(1, opts.concurrency ?? 32)
    this.leaseMs = Math.max(100, opts.leaseMs ?? 30_000)
    this.pollMs = Math.max(1, opts.pollMs ?? 1_000)
    this.stallMs = Math.max(1, opts.stallMs ?? 20_000)
    this.retentionMs = Math.max(1, opts.heartbeatRetentionMs ?? 7 * 86_400_000)
    this.now = opts.now ?? (() => new Date())
    this.log = new RelayLog({ relay: opts.relayId, format: opts.logFormat ?? 'text', write: opts.log ?? (() => {}), scrub: (t) => secrets.text(t), now: this.now })
    this.conditions = new Conditions(this.log, this.monotonic, Math.max(1, opts.reminderMs ?? 60_000))
    this.startedAt = this.now().toISOString()
    this.book = new LeaseBook(this.leaseMs, this.monotonic)
    this.ctx = {
      // Scrubbed, then signed: what the relay signs is what is journaled.
      store: redactingStore(sealingStore(leasedStore(this.store, opts.relayId, (id) => this.leaseOf(id), (id) => this.lost(id)), sealer({ key: opts.key, id: opts.relayId, role: 'relay' })), secrets),
      targets: this.targets,
      policy: opts.policy,
      retry: { ...DEFAULT_RETRY, ...opts.retry },
      sleep: opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      now: () => this.now().getTime(),
      stillHeld: (id) => this.stillHeld(id) || (this.lost(id), false),
      observe: (event) => this.observed(event),
    }
  }

  get id(): string {
    return this.opts.relayId
  }

  /** The port /healthz and /metrics answer on, once started with healthPort. */
  get healthPort(): number | undefined {
    return this.health?.port
  }

  async start(): Promise<void> {
    if (this.loop) return
    if (this.opts.healthPort !== undefined) {
      this.health = await startHealthServer(
        { health: () => this.healthReport(), metrics: () => this.metrics.exposition(this.id) },
        this.opts.healthPort,
        this.opts.healthHost,
      )
    }
    this.otel = bridgeRelayMetrics(this.metrics, this.id, this.opts.meterProvider)
    if (this.store.subscribe) {
      const event: StoreEvent = 'ready'
      this.unsubscribe = await this.store.subscribe(event, () => this.poke()).catch(() => null)
    }
    const tick = Math.max(50, Math.floor(this.leaseMs / 3))
    this.timers.push(setInterval(() => void this.renew(), tick), setInterval(() => void this.beat(), tick))
    void this.beat()
    this.startNotifying()
    this.loop = this.claimLoop()
    const where = this.health ? `; /healthz and /metrics on ${this.opts.healthHost ?? '127.0.0.1'}:${this.health.port}` : ''
    this.log.emit({ level: 'info', event: 'started', msg: `draining ${this.store.kind} store${where}` })
  }

  private startNotifying(): void {
    const config = this.opts.notify
    if (!config || config.notify.length === 0) return
    const outbox = new Outbox({ store: this.opts.store, targets: [...this.targets.values()], pollMs: 60_000 })
    const notifier = new Notifier({
      store: this.opts.store,
      config,
      // Proposed to the outbox, then claimed and sent by this relay (or another) like any effect.
      propose: async (input) => {
        await outbox.submit(input)
        this.poke()
      },
      now: () => this.now().getTime(),
      log: (line) => this.log.emit({ level: 'warn', event: 'notify', msg: line }),
    })
    let running = false
    const pass = async () => {
      if (running || this.stopping) return
      running = true
      try {
        const r = await notifier.pass()
        this.metrics.notices += r.proposed
        this.metrics.noticeErrors += r.errors
      } finally {
        running = false
      }
    }
    this.timers.push(setInterval(() => void pass(), this.opts.notifyEveryMs ?? 2_000))
    this.closeNotifier = () => outbox.close()
    void pass()
  }

  private closeNotifier?: () => Promise<void>

  /** Resolves when the relay has stopped (after stop(), once drained). */
  async stop(): Promise<RelayStats> {
    if (!this.stopping) this.log.emit({ level: 'info', event: 'stopping', msg: 'stopping: claiming nothing more, finishing what is in flight' })
    this.stopping = true
    this.poke()
    await this.loop
    // Give back what was claimed but not started: another relay may take it at once.
    const unstarted = [...this.queues.values()].flat()
    this.queues.clear()
    for (const c of unstarted) this.book.remove(c.snapshot.effect.id)
    this.metrics.inFlight -= unstarted.length
    await this.store.releaseLease(this.id, unstarted.map((c) => ({ effectId: c.snapshot.effect.id, token: c.lease.token }))).catch(() => {})
    while (this.work.size > 0) await Promise.allSettled([...this.work])
    for (const t of this.timers) clearInterval(t)
    this.timers = []
    await this.closeNotifier?.().catch(() => {})
    await this.unsubscribe?.().catch(() => {})
    await this.beat(true)
    await this.counting
    await this.health?.close()
    this.otel?.close()
    this.otel = null
    this.log.emit({ level: 'info', event: 'stopped', finished: this.metrics.total(), msg: `drained: ${this.metrics.total()} effects finished` })
    return this.stats()
  }

  stats(): RelayStats {
    const byStatus: RelayStats['byStatus'] = {}
    for (const s of ['committed', 'rejected', 'held', 'failed', 'ambiguous', 'in_flight'] as const) {
      const n = this.metrics.total(s)
      if (n > 0) byStatus[s] = n
    }
    return {
      relay: this.id,
      claimed: this.metrics.claimed,
      finished: this.metrics.total(),
      byStatus,
      leasesLost: this.metrics.leasesLost,
      storeErrors: this.metrics.storeErrors,
      refused: this.metrics.totalRefused(),
    }
  }

  private async claimLoop(): Promise<void> {
    let backoff = 50
    // Where the last claim ended (created_at of its newest effect): the next claims scan
    // from there instead of walking every effect before it, settled or still leased (a
    // claim takes the oldest first, so whatever older it did not take was leased or locked
    // by someone else). A full scan now and then picks up older effects whose lease ran
    // out or was given back, and any created out of order.
    let cursor: string | undefined
    let lastFullScan = -Infinity
    const fullScanMs = Math.min(5_000, this.leaseMs / 2)
    while (!this.stopping) {
      // Claim ahead: up to twice the concurrency per target, so the next batch is already
      // leased when the running one finishes (its leases are renewed while it waits).
      const ahead = 2 * this.concurrency
      const open = [...this.targets.keys()].filter((t) => this.queued(t) < ahead)
      const room = open.reduce((n, t) => n + ahead - this.queued(t), 0)
      // Half a target's concurrency per claim: batches then start apart, and one is worked on
      // (signed) while another's commit is at the store, instead of all waiting for one commit.
      const limit = Math.min(room, open.length * Math.max(1, Math.ceil(this.concurrency / 2)))
      if (room > 0) {
        const sentAt = this.monotonic()
        let claimed: ClaimedEffect[]
        const full = cursor === undefined || sentAt - lastFullScan >= fullScanMs
        try {
          this.metrics.claimQueries++
          claimed = await inSpan('interlock.relay.claim', { 'interlock.relay': this.id, 'interlock.limit': limit }, async (span) => {
            const got = await this.store.claim({
              relay: this.id,
              limit,
              leaseMs: this.leaseMs,
              targets: open,
              createdFrom: full ? undefined : cursor,
            })
            span?.setAttribute('interlock.claimed', got.length)
            return got
          }, { parent: ROOT_CONTEXT })
          this.storeOk('claim')
          // Giving back and parking are not tried again when they fail (the lease runs out on its own):
          // once the store answers claims, nothing of theirs is left failing.
          this.storeOk('release')
          this.storeOk('park')
          this.noticeRewind(claimed)
          this.metrics.lastClaimAt = this.now().getTime()
          this.lastClaimFoundNothing = claimed.length === 0
          // Work claimed is progress; so is finding none with nothing in flight (idle).
          if (claimed.length > 0 || this.metrics.inFlight === 0) this.progress.made()
          backoff = 50
        } catch (e) {
          this.lastClaimFoundNothing = false
          this.storeFailed('claim', 'claiming effects', e)
          await this.pause(backoff)
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)
          continue
        }
        if (this.stopping) {
          // Stop arrived while the claim was on its way: give the claim straight back.
          await this.store.releaseLease(this.id, claimed.map((c) => ({ effectId: c.snapshot.effect.id, token: c.lease.token }))).catch(() => {})
          break
        }
        if (full) lastFullScan = sentAt
        cursor = claimed.at(-1)?.snapshot.createdAt
        for (const c of claimed) this.accept(c, sentAt)
        // Nothing from the cursor on: look at everything before waiting.
        if (!full && claimed.length === 0) continue
        // A full batch says more is waiting: claim again as soon as there is room.
        if (claimed.length === limit) continue
      }
      await this.pause(this.pollMs)
    }
  }

  /**
   * One relay's claims are sent one after another, and a store's fencing
   * tokens only grow (a PostgreSQL sequence; a counter row on SQLite): a
   * token not above one this relay was given before means the store went
   * back in time. After a failover to a standby that was not synchronous
   * (or a restore), the server lacks commits this relay saw, DISPATCHED
   * records among them: said loudly, once per claim that shows it. Fencing
   * still holds (leaseOf compares claims, not tokens, and the store compares
   * (relay, token)); what it cannot undo is a lost DISPATCHED.
   */
  private noticeRewind(claimed: readonly ClaimedEffect[]): void {
    let low = Infinity
    let high = this.highestToken
    for (const c of claimed) {
      if (c.lease.token <= this.highestToken) low = Math.min(low, c.lease.token)
      high = Math.max(high, c.lease.token)
    }
    if (low !== Infinity) {
      this.log.emit({
        level: 'error',
        event: 'store-rewound',
        token: low,
        highestToken: this.highestToken,
        msg: `the store handed out fencing token ${low}, not above ${this.highestToken} which this relay was given before: its server lacks commits this relay saw (a failover to a standby that was not synchronous, or a restore); effects whose DISPATCHED record was lost may be sent again`,
      })
    }
    this.highestToken = high
  }

  private accept(c: ClaimedEffect, sentAt: number): void {
    this.book.add(c, sentAt)
    this.metrics.claimed++
    this.metrics.inFlight++
    const target = c.snapshot.effect.target
    let q = this.queues.get(target)
    if (!q) this.queues.set(target, (q = []))
    q.push(c)
    this.pump(target)
  }

  private queued(target: string): number {
    return (this.queues.get(target)?.length ?? 0) + (this.running.get(target) ?? 0)
  }

  private pump(target: string): void {
    const q = this.queues.get(target)
    while (q && q.length > 0 && (this.running.get(target) ?? 0) < this.concurrency) {
      const c = q.shift()!
      this.running.set(target, (this.running.get(target) ?? 0) + 1)
      const p = this.process(c).finally(() => {
        this.work.delete(p)
        this.running.set(target, this.running.get(target)! - 1)
        this.metrics.inFlight--
        this.pump(target)
        // Claim again once a batch's worth of room is free: one query per batch, not one per finished effect.
        if (this.metrics.inFlight <= this.concurrency * this.targets.size) this.poke()
      })
      this.work.add(p)
    }
  }

  /**
   * The lease the work in this async context holds on `effectId`: that of the
   * claim it works from (`working`), never a later claim of the same effect.
   * A relay stopped past its lease may claim an effect again while the work of
   * its older claim is still on its way (queued, or waiting on the store);
   * that work must not write or send under the new claim's token.
   */
  private leaseOf(effectId: string): Lease | undefined {
    const w = this.working.getStore()
    // The claim itself, not its token: after a failover that lost commits, the new primary may hand
    // this relay a token it held before (README.md, "Failover"), and the older work must not pass for the newer.
    if (w && w.effectId === effectId) return this.book.lease(effectId) === w.lease ? w.lease : undefined
    return this.book.lease(effectId)
  }

  private async process(c: ClaimedEffect): Promise<void> {
    const id = c.snapshot.effect.id
    // A later claim of this effect by this relay took over the book's entry: that claim's work carries it on.
    if (this.book.lease(id) !== c.lease) return
    // In the trace of whoever asked for the effect (journaled with it), however long ago and wherever that was.
    const parent = contextOfTrace(c.snapshot.effect.trace) ?? ROOT_CONTEXT
    return this.working.run({ effectId: id, target: c.snapshot.effect.target, lease: c.lease, lost: false }, () =>
      inSpan('interlock.relay.effect', { ...effectAttributes(c.snapshot.effect, c.snapshot.tier), 'interlock.relay': this.id, 'interlock.found': c.snapshot.state }, () => this.work1(c), { parent }),
    )
  }

  /** The work on `effectId` in this context lost it: another writer moved it first, or its lease ran out. */
  private lost(effectId: string): void {
    const w = this.working.getStore()
    if (w && w.effectId === effectId) w.lost = true
  }

  private async work1(c: ClaimedEffect): Promise<void> {
    const row = c.snapshot
    const ours = () => this.book.lease(row.effect.id) === c.lease
    try {
      const check = await this.checkJournal(row)
      // A relay whose lease ran out may see the effect moved on by the relay that took it over: not an edit.
      if (!check.ok && !(ours() && this.book.live(row.effect.id))) return void this.stillHeld(row.effect.id)
      if (!check.ok) return await this.refuse(c, check)
      // From here on the journal's effect: what advance sends is the PROPOSED record's args and premises.
      const snap = check.snapshot
      const outcome = await advance(this.ctx, snap, { recovering: snap.state === 'DISPATCHED' })
      this.progress.made()
      // The outcome is logged and counted once, by the relay whose record settled it: one that lost the
      // effect midway (its lease ran out, another relay took it over and wrote first) says only that.
      if (this.working.getStore()?.lost) this.log.takenOver(snap.effect.target, outcome)
      else {
        this.metrics.outcome(snap.effect.target, outcome.status)
        this.log.outcome(snap.effect.target, outcome, snap.state)
      }
      this.storeOk('work')
      if (outcome.status === 'in_flight' && outcome.notBefore) await this.park(snap.effect.id, outcome.notBefore)
      // HELD waits for operators, not for this relay: a lease kept would hold a released effect back for up to lease_ms.
      else if (outcome.status === 'held') await this.giveBack(snap.effect.id)
    } catch (e) {
      // The effect stays where it is; its lease runs out and it is claimed again (by us or another relay).
      this.metrics.errors++
      this.storeFailed('work', 'working on effects', e, { effectId: row.effect.id, target: row.effect.target })
    } finally {
      if (ours()) this.book.remove(row.effect.id)
    }
  }

  /** Gives the lease back now: the next claim of the effect (once released) need not wait for it to run out. */
  private async giveBack(effectId: string): Promise<void> {
    const lease = this.leaseOf(effectId)
    if (!lease) return
    this.book.remove(effectId)
    try {
      await this.store.releaseLease(this.id, [{ effectId, token: lease.token }])
      this.storeOk('release')
    } catch (e) {
      // It runs out on its own; the effect is then claimed as before.
      this.storeFailed('release', 'giving back leases', e, { effectId })
    }
  }

  /**
   * Keeps every relay off an effect until `notBefore` without holding it: the
   * lease is renewed once to run out then, and dropped from the book first so
   * the periodic renewal leaves it alone. advance() refuses to send a returned
   * effect before its notBefore anyway, so a renewal racing this one (it can
   * only shorten the lease) costs a claim, never a send.
   */
  private async park(effectId: string, notBefore: string): Promise<void> {
    const lease = this.leaseOf(effectId)
    if (!lease) return
    this.book.remove(effectId)
    const ref = { effectId, token: lease.token }
    const ms = Date.parse(notBefore) - this.now().getTime()
    try {
      if (ms > 0) await this.store.renewLease(this.id, [ref], Math.ceil(ms))
      else await this.store.releaseLease(this.id, [ref])
      this.storeOk('park')
    } catch (e) {
      // The lease runs out on its own: a claim may then come early, and advance() still sends nothing early.
      this.storeFailed('park', 'parking leases', e, { effectId })
    }
  }

  /** One journal read (chain verified, its last record the row's) and the checks of send-check.ts. */
  private async checkJournal(row: ClaimedEffect['snapshot']): Promise<SendCheck> {
    let history
    try {
      history = await this.store.history(row.effect.id)
    } catch (e) {
      if (e instanceof IntegrityError) return { ok: false, kind: 'journal', reasons: [e.message] }
      throw e
    }
    return checkBeforeSend(row, history, this.authority)
  }

  /**
   * Sends nothing and writes no transition: says so (log, metric, heartbeat for
   * `outbox status`), and keeps the lease for parkMs so that no relay spins on
   * the effect; after that it is claimed and checked again (the row may have
   * been repaired, or the rule changed).
   */
  private async refuse(c: ClaimedEffect, check: Extract<SendCheck, { ok: false }>): Promise<void> {
    const { id, target } = c.snapshot.effect
    this.metrics.refused(target, check.kind)
    this.refusals.delete(id)
    this.refusals.set(id, { effectId: id, target, kind: check.kind, reasons: check.reasons, at: this.now().toISOString() })
    for (const old of this.refusals.keys()) if (this.refusals.size > REFUSALS_SHOWN) this.refusals.delete(old)
    // An authorization that does not stand, for an effect a rule in force holds: held again, for operators.
    const refused = { level: 'error', event: 'refused', effectId: id, target, refusal: check.kind, reason: check.reasons.join('; ') } as const
    const what = `refused effect ${id} on ${target}, nothing sent (${check.kind}): ${refused.reason}`
    if (check.hold && check.snapshot?.state === 'AUTHORIZED' && (await this.holdAgain(check.snapshot, check.hold, check.reasons))) {
      this.log.emit({ ...refused, state: 'HELD', rule: check.hold.rule, msg: `${what}; held again under rule "${check.hold.rule}" for operators to release or deny` })
      return this.giveBack(id)
    }
    const until = new Date(this.now().getTime() + this.parkMs).toISOString()
    this.log.emit({ ...refused, parkedUntil: until, msg: `${what}; parked for ${secondsText(this.parkMs)}` })
    await this.park(id, until)
  }

  /** AUTHORIZED → HELD (lifecycle.ts), signed like every record this relay writes; false when the effect moved on first. */
  private async holdAgain(snap: EffectSnapshot, hold: Hold, reasons: string[]): Promise<boolean> {
    const t = await transition(this.ctx, snap, 'HELD', heldAgainData(hold, reasons))
    if (t.moved) this.metrics.outcome(snap.effect.target, 'held')
    return t.moved
  }

  private stillHeld(effectId: string): boolean {
    if (this.leaseOf(effectId) && this.book.live(effectId)) return true
    this.metrics.leasesLost++
    const target = this.working.getStore()?.target
    this.log.emit({ level: 'warn', event: 'lease-lost', effectId, target, msg: `lease on effect ${effectId} ran out or was taken over; sending nothing, leaving it to the relay that holds it now` })
    return false
  }

  /** A try that failed and will be tried again, or a target's fence that stopped a request: logged; a try answered is progress. */
  private observed(event: DispatchEvent): void {
    const target = this.working.getStore()?.target
    if (event.kind === 'fenced') {
      this.log.emit({ level: 'warn', event: 'fenced', effectId: event.effectId, target, reason: event.reason, msg: `effect ${event.effectId}: the target's fence stopped the request before it was written (${event.reason})` })
      return
    }
    this.progress.made()
    // The wait the service asked for (or the back-off) is not a stall.
    this.progress.waiting(event.waitMs)
    this.log.emit({
      level: 'warn',
      event: 'retry',
      effectId: event.effectId,
      target,
      attempt: event.attempt,
      maxAttempts: event.maxAttempts,
      waitMs: event.waitMs,
      reason: event.reason,
      msg: `effect ${event.effectId}${target ? ` on ${target}` : ''}: try ${event.attempt} of ${event.maxAttempts} failed (${event.reason}); trying again in ${secondsText(event.waitMs)}`,
    })
  }

  private async renew(): Promise<void> {
    const refs = this.book.refs()
    // Nothing held, nothing to renew: a renewal that failed before (the store down) has nothing left failing.
    if (refs.length === 0) return this.storeOk('renew')
    const sentAt = this.monotonic()
    try {
      const kept = await this.store.renewLease(this.id, refs, this.leaseMs)
      this.storeOk('renew')
      const lost = this.book.renewed(refs, kept, sentAt)
      this.metrics.leasesLost += lost.length
      for (const effectId of lost) {
        this.log.emit({ level: 'warn', event: 'lease-lost', effectId, msg: `lease on effect ${effectId} was taken over by another relay (found at renewal); this relay sends nothing more for it` })
      }
    } catch (e) {
      this.storeFailed('renew', 'renewing leases', e)
    }
  }

  private async beat(stopped = false): Promise<void> {
    const info: JsonObject = {
      pid: process.pid,
      host: hostname(),
      startedAt: this.startedAt,
      state: stopped ? 'stopped' : this.stopping ? 'draining' : 'running',
      inFlight: this.metrics.inFlight,
      finished: this.metrics.total(),
      concurrency: this.concurrency,
      leaseMs: this.leaseMs,
      targets: [...this.targets.keys()],
      refused: [...this.refusals.values()].map((r) => ({ ...r })),
    }
    try {
      await this.store.heartbeat(this.id, info)
      this.storeOk('heartbeat')
    } catch (e) {
      this.storeFailed('heartbeat', 'the heartbeat', e)
      return
    }
    if (stopped) return
    await this.forgetGoneRelays()
    await this.countWaiting()
  }

  /**
   * HELD and AMBIGUOUS effects in the store, for /metrics: one grouped query
   * over the state index, from the heartbeat, at most every
   * COUNT_WAITING_EVERY_MS and never two at once. A failure is counted and
   * logged like any store operation's, and leaves the last count.
   */
  private countWaiting(): Promise<void> {
    const now = this.monotonic()
    if (this.stopping || this.counting || now - this.lastWaitingCountAt < COUNT_WAITING_EVERY_MS) return Promise.resolve()
    this.lastWaitingCountAt = now
    const count = async () => {
      const started = this.monotonic()
      try {
        // On the store itself, not the one watched for /healthz: the work does not need the count, and a
        // count waiting behind a lock must neither make the relay unhealthy nor be the call /healthz names.
        const counts = await this.opts.store.countByState(WAITING_STATES)
        this.metrics.waiting = { HELD: counts.HELD, AMBIGUOUS: counts.AMBIGUOUS }
        this.storeOk('count')
      } catch (e) {
        this.storeFailed('count', 'counting HELD and AMBIGUOUS effects', e)
      } finally {
        this.metrics.storeCall('countByState', (this.monotonic() - started) / 1000)
      }
    }
    const counting: Promise<void> = count().finally(() => {
      if (this.counting === counting) this.counting = null
    })
    return (this.counting = counting)
  }

  /**
   * Every restart under the default id (<host>-<pid>) leaves a row: the
   * heartbeat deletes those not seen for the retention, now and then. A
   * failure (a role granted no DELETE on relays) is logged, not counted
   * against the relay's health: its work goes on.
   */
  private async forgetGoneRelays(): Promise<void> {
    const now = this.monotonic()
    if (now - this.lastForgetAt < Math.min(FORGET_EVERY_MS, this.retentionMs)) return
    this.lastForgetAt = now
    try {
      const n = await this.store.forgetRelays(this.retentionMs)
      this.conditions.ok('forget')
      if (n > 0) this.log.emit({ level: 'info', event: 'forgot-relays', count: n, msg: `deleted ${n} relay row${n === 1 ? '' : 's'} not seen for ${secondsText(this.retentionMs)}` })
    } catch (e) {
      this.conditions.failed('forget', 'deleting the rows of relays gone longer than the retention', e)
    }
  }

  /**
   * 200 while the relay makes progress (progress.ts); 503 when it drains, a
   * store call has been pending for stallMs, a store operation its work needs
   * has failed for stallMs, or it has had work and made no progress for stallMs.
   */
  private healthReport(): { ok: boolean; body: Record<string, unknown> } {
    const view = this.progress.view()
    const failing = this.conditions.longest(WORK_CONDITIONS)
    const unreachable = this.conditions.unreachable(WORK_CONDITIONS)
    const idle = this.metrics.inFlight === 0 && this.lastClaimFoundNothing
    const status = healthStatus({ stopping: this.stopping, view, failing, unreachable, idle, stallMs: this.stallMs })
    return {
      ok: status === 'ok',
      body: {
        status,
        relay: this.id,
        inFlight: this.metrics.inFlight,
        finished: this.metrics.total(),
        lastClaimAt: this.metrics.lastClaimAt ? new Date(this.metrics.lastClaimAt).toISOString() : null,
        idle,
        sinceProgressMs: Math.round(view.sinceProgressMs),
        pendingStoreCall: view.pending ? { call: view.pending.what, ms: Math.round(view.pending.ms) } : null,
        failing: failing ? { what: failing.what, ms: Math.round(failing.failingMs), attempts: failing.attempts, error: failing.lastError, unreachable: failing.unreachable } : null,
        storeFailingMs: failing ? Math.round(failing.failingMs) : 0,
        stallMs: this.stallMs,
      },
    }
  }

  private storeOk(key: string): void {
    this.conditions.ok(key)
    this.metrics.lastStoreOkAt = this.now().getTime()
  }

  private storeFailed(key: string, what: string, e: unknown, fields: { effectId?: string; target?: string } = {}): void {
    this.metrics.storeErrors++
    this.conditions.failed(key, what, e, fields)
  }

  /** Waits up to `ms`, or until something wakes the loop (a notification, a free slot, stop). */
  private pause(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      const self = this
      function done() {
        clearTimeout(timer)
        if (self.wake === done) self.wake = null
        resolve()
      }
      this.wake = done
    })
  }

  private poke(): void {
    this.wake?.()
  }
}
