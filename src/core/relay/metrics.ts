/**
 * What a relay counts, and its Prometheus text exposition (format 0.0.4,
 * written by hand: a few counters and gauges need no client library).
 */
import type { OutcomeStatus } from '../outcome.js'

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
    const metric = (name: string, type: 'counter' | 'gauge', help: string, samples: [string, number][]) => {
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

  /** Exposition samples, each labelled with `labels` (the relay), its target and its value. */
  samples(labels: string): [string, number][] {
    return [...this.counts].map(([k, v]) => {
      const [target, value] = k.split('\u0000')
      return [`${labels},target="${label(target!)}",${this.name}="${value}"`, v]
    })
  }
}

function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}
