/**
 * What a relay counts, and its Prometheus text exposition (format 0.0.4,
 * written by hand: a few counters, gauges and one histogram need no client
 * library). The same numbers reach OpenTelemetry through otel-metrics.ts,
 * which reads them from here when its exporter collects.
 */
import type { OutcomeStatus } from '../outcome.js'

/** The states counted in `interlock_relay_effects_waiting`: effects waiting for operators. */
export const WAITING_STATES = ['HELD', 'AMBIGUOUS'] as const
export type WaitingState = (typeof WAITING_STATES)[number]

/**
 * Upper bounds (seconds) of `interlock_relay_store_duration_seconds`: from a
 * SQLite read (well under a millisecond) to a PostgreSQL call waiting on a lock.
 */
export const STORE_SECONDS_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export class RelayMetrics {
  /** Finished effects by target and outcome status. */
  readonly outcomes = new TargetCounter('status')
  /** Effects refused before sending, by target and why (send-check.ts). */
  readonly refusals = new TargetCounter('reason')
  claimQueries = 0
  claimed = 0
  leasesLost = 0
  storeErrors = 0
  errors = 0
  inFlight = 0
  /** Notices journaled ([[notify]]), and notices or passes that failed. */
  notices = 0
  noticeErrors = 0
  /** Unix ms of the last claim query that answered, 0 before the first. */
  lastClaimAt = 0
  /** Unix ms of the last store operation that answered. */
  lastStoreOkAt = 0
  /**
   * Effects in the store waiting for operators, HELD and AMBIGUOUS, in the
   * whole store (not only this relay's): counted by the heartbeat, at most
   * every few seconds (relay.ts); undefined until the first count answered.
   */
  waiting: Record<WaitingState, number> | undefined
  /** How long the relay's store calls took, by operation (the Store method: claim, append, history…). */
  readonly storeCalls = new Histogram(STORE_SECONDS_BUCKETS)
  /** Told every store call too: the OpenTelemetry bridge's histogram (otel-metrics.ts), which has no observable form. */
  storeCallListener: ((operation: string, seconds: number) => void) | undefined

  /** A store call settled (answered or failed) after `seconds`. */
  storeCall(operation: string, seconds: number): void {
    this.storeCalls.observe(operation, seconds)
    this.storeCallListener?.(operation, seconds)
  }

  outcome(target: string, status: OutcomeStatus): void {
    this.outcomes.add(target, status)
  }

  refused(target: string, kind: string): void {
    this.refusals.add(target, kind)
  }

  totalRefused(): number {
    return this.refusals.total()
  }

  total(status?: OutcomeStatus): number {
    return this.outcomes.total(status)
  }

  exposition(relay: string): string {
    const r = `relay="${label(relay)}"`
    const lines: string[] = []
    const metric = (name: string, type: 'counter' | 'gauge' | 'histogram', help: string, samples: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
      for (const [labels, v] of samples) lines.push(`${name}{${labels}} ${v}`)
    }
    metric('interlock_relay_effects_total', 'counter', 'Effects this relay finished working on, by target and outcome status.', this.outcomes.samples(r))
    metric(
      'interlock_relay_effects_refused_total',
      'counter',
      'Effects refused before sending, nothing sent: their row disagreed with their journal (row-disagrees), their authorization did not stand (unauthorized), or their journal did not verify (journal).',
      this.refusals.samples(r),
    )
    metric('interlock_relay_claimed_total', 'counter', 'Effects claimed.', [[r, this.claimed]])
    metric('interlock_relay_claim_queries_total', 'counter', 'Claim queries sent to the store.', [[r, this.claimQueries]])
    metric('interlock_relay_leases_lost_total', 'counter', 'Leases another relay took over before this one finished.', [[r, this.leasesLost]])
    metric('interlock_relay_store_errors_total', 'counter', 'Store operations that failed (the store unreachable or a write unconfirmed).', [[r, this.storeErrors]])
    metric('interlock_relay_errors_total', 'counter', 'Effects whose processing failed unexpectedly; they stay in the outbox.', [[r, this.errors]])
    metric('interlock_relay_notices_total', 'counter', 'Notices ([[notify]]) this relay journaled for operators.', [[r, this.notices]])
    metric('interlock_relay_notify_errors_total', 'counter', 'Notices that could not be journaled, and notify passes that failed (logged; dispatch goes on).', [[r, this.noticeErrors]])
    metric('interlock_relay_in_flight', 'gauge', 'Effects claimed and not yet finished.', [[r, this.inFlight]])
    metric('interlock_relay_last_claim_timestamp_seconds', 'gauge', 'When the last claim query answered (Unix seconds).', [[r, this.lastClaimAt / 1000]])
    metric(
      'interlock_relay_effects_waiting',
      'gauge',
      'Effects in the store waiting for operators, by state (HELD, AMBIGUOUS), counted every few seconds; every relay on a store reports the same count.',
      this.waiting ? WAITING_STATES.map((s) => [`${r},state="${s}"`, this.waiting![s]]) : [],
    )
    const storeSeconds = 'interlock_relay_store_duration_seconds'
    metric(storeSeconds, 'histogram', 'How long the store calls this relay made took, answered or failed, by operation.', [])
    for (const [operation, h] of this.storeCalls.entries()) {
      const labels = `${r},operation="${label(operation)}"`
      h.cumulative.forEach((n, i) => lines.push(`${storeSeconds}_bucket{${labels},le="${i < h.bounds.length ? h.bounds[i] : '+Inf'}"} ${n}`))
      lines.push(`${storeSeconds}_sum{${labels}} ${h.sum}`, `${storeSeconds}_count{${labels}} ${h.count}`)
    }
    return `${lines.join('\n')}\n`
  }
}

/** A counter by target and one more label (an outcome's status, a refusal's reason). */
class TargetCounter {
  private readonly counts = new Map<string, number>()

  constructor(private readonly name: string) {}

  add(target: string, value: string): void {
    const k = `${target}\u0000${value}`
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1)
  }

  /** All counted, or only those with this value. */
  total(value?: string): number {
    let n = 0
    for (const [k, v] of this.counts) if (!value || k.endsWith(`\u0000${value}`)) n += v
    return n
  }

  /** Every count: [target, value, count]. */
  entries(): [string, string, number][] {
    return [...this.counts].map(([k, v]) => {
      const [target, value] = k.split('\u0000')
      return [target!, value!, v]
    })
  }

  /** Exposition samples, each labelled with `labels` (the relay), its target and its value. */
  samples(labels: string): [string, number][] {
    return this.entries().map(([target, value, v]) => [`${labels},target="${label(target)}",${this.name}="${label(value)}"`, v])
  }
}

/** One series of a histogram: counts per bucket (the last one past every bound), their sum and count. */
export interface HistogramSeries {
  readonly bounds: readonly number[]
  /** Observations at or below each bound, then all of them (Prometheus's `le`, the last one "+Inf"). */
  readonly cumulative: number[]
  readonly sum: number
  readonly count: number
}

/** A histogram by one label: fixed bounds, a few additions per observation. */
export class Histogram {
  private readonly series = new Map<string, { buckets: number[]; sum: number; count: number }>()

  constructor(readonly bounds: readonly number[]) {}

  observe(key: string, value: number): void {
    let s = this.series.get(key)
    if (!s) this.series.set(key, (s = { buckets: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 }))
    // A bucket holds what is at or below its bound and above the one before (Prometheus's and OpenTelemetry's both).
    let i = 0
    while (i < this.bounds.length && value > this.bounds[i]!) i++
    s.buckets[i]!++
    s.sum += value
    s.count++
  }

  entries(): [string, HistogramSeries][] {
    return [...this.series].map(([key, s]) => {
      let n = 0
      return [key, { bounds: this.bounds, cumulative: s.buckets.map((b) => (n += b)), sum: s.sum, count: s.count }]
    })
  }
}

function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}
