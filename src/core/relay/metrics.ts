/**
 * What a relay counts, and its Prometheus text exposition (format 0.0.4,
 * written by hand: a few counters and gauges need no client library).
 */
import type { OutcomeStatus } from '../outcome.js'

export class RelayMetrics {
  /** Finished effects by target and outcome status. */
  readonly outcomes = new Map<string, number>()
  /** Effects refused before sending, by target and why (send-check.ts). */
  readonly refusals = new Map<string, number>()
  claimQueries = 0
  claimed = 0
  leasesLost = 0
  storeErrors = 0
  errors = 0
  inFlight = 0
  /** Unix ms of the last claim query that answered, 0 before the first. */
  lastClaimAt = 0
  /** Unix ms of the last store operation that answered. */
  lastStoreOkAt = 0

  outcome(target: string, status: OutcomeStatus): void {
    const k = `${target}\u0000${status}`
    this.outcomes.set(k, (this.outcomes.get(k) ?? 0) + 1)
  }

  refused(target: string, kind: string): void {
    const k = `${target}\u0000${kind}`
    this.refusals.set(k, (this.refusals.get(k) ?? 0) + 1)
  }

  totalRefused(): number {
    let n = 0
    for (const v of this.refusals.values()) n += v
    return n
  }

  total(status?: OutcomeStatus): number {
    let n = 0
    for (const [k, v] of this.outcomes) if (!status || k.endsWith(`\u0000${status}`)) n += v
    return n
  }

  exposition(relay: string): string {
    const r = `relay="${label(relay)}"`
    const lines: string[] = []
    const metric = (name: string, type: 'counter' | 'gauge', help: string, samples: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
      for (const [labels, v] of samples) lines.push(`${name}{${labels}} ${v}`)
    }
    metric(
      'interlock_relay_effects_total',
      'counter',
      'Effects this relay finished working on, by target and outcome status.',
      [...this.outcomes].map(([k, v]) => {
        const [target, status] = k.split('\u0000')
        return [`${r},target="${label(target!)}",status="${status}"`, v]
      }),
    )
    metric(
      'interlock_relay_effects_refused_total',
      'counter',
      'Effects refused before sending, nothing sent: their row disagreed with their journal (row-disagrees), their authorization did not stand (unauthorized), or their journal did not verify (journal).',
      [...this.refusals].map(([k, v]) => {
        const [target, kind] = k.split('\u0000')
        return [`${r},target="${label(target!)}",reason="${kind}"`, v]
      }),
    )
    metric('interlock_relay_claimed_total', 'counter', 'Effects claimed.', [[r, this.claimed]])
    metric('interlock_relay_claim_queries_total', 'counter', 'Claim queries sent to the store.', [[r, this.claimQueries]])
    metric('interlock_relay_leases_lost_total', 'counter', 'Leases another relay took over before this one finished.', [[r, this.leasesLost]])
    metric('interlock_relay_store_errors_total', 'counter', 'Store operations that failed (the store unreachable or a write unconfirmed).', [[r, this.storeErrors]])
    metric('interlock_relay_errors_total', 'counter', 'Effects whose processing failed unexpectedly; they stay in the outbox.', [[r, this.errors]])
    metric('interlock_relay_in_flight', 'gauge', 'Effects claimed and not yet finished.', [[r, this.inFlight]])
    metric('interlock_relay_last_claim_timestamp_seconds', 'gauge', 'When the last claim query answered (Unix seconds).', [[r, this.lastClaimAt / 1000]])
    return `${lines.join('\n')}\n`
  }
}

function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}
