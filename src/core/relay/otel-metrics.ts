/**
 * The relay's metrics as OpenTelemetry metrics, through `@opentelemetry/api`
 * only: with no SDK registered the API's meter is a no-op and this costs
 * nothing; with one, its exporter (OTLP, Prometheus…) gets what /metrics
 * shows. The numbers are read from RelayMetrics by one batch callback when
 * the SDK collects: nothing is counted twice and nothing is added to the
 * work, except the store-duration histogram, which OpenTelemetry has no
 * observable form of: RelayMetrics tells this bridge each store call
 * (a no-op histogram's record without an SDK).
 *
 * Each name converts to the /metrics name by the specification's
 * OpenTelemetry-to-Prometheus rules ('.' to '_', the unit's suffix for
 * seconds, `_total` on counters, `{…}` units dropped: the Collector's and
 * Prometheus's OTLP receiver's), and the attributes are the /metrics labels,
 * so one dashboard (deploy/grafana/interlock-relay.json) reads either. (The
 * JS SDK's own Prometheus exporter adds no unit suffix: there the two
 * second-valued names lack `_seconds`. Units are kept out of the names, as
 * OpenTelemetry's naming guidelines ask.)
 *
 * | OpenTelemetry | kind | /metrics |
 * |---|---|---|
 * | interlock.relay.effects {target, status} | counter | interlock_relay_effects_total |
 * | interlock.relay.effects.refused {target, reason} | counter | interlock_relay_effects_refused_total |
 * | interlock.relay.claimed | counter | interlock_relay_claimed_total |
 * | interlock.relay.claim_queries | counter | interlock_relay_claim_queries_total |
 * | interlock.relay.leases_lost | counter | interlock_relay_leases_lost_total |
 * | interlock.relay.store_errors | counter | interlock_relay_store_errors_total |
 * | interlock.relay.errors | counter | interlock_relay_errors_total |
 * | interlock.relay.notices | counter | interlock_relay_notices_total |
 * | interlock.relay.notify_errors | counter | interlock_relay_notify_errors_total |
 * | interlock.relay.in_flight | up-down counter | interlock_relay_in_flight (gauge) |
 * | interlock.relay.last_claim.timestamp (s) | gauge | interlock_relay_last_claim_timestamp_seconds |
 * | interlock.relay.effects.waiting {state} | gauge | interlock_relay_effects_waiting |
 * | interlock.relay.store.duration (s) {operation} | histogram | interlock_relay_store_duration_seconds |
 *
 * Every point carries `relay` (the relay's id) as /metrics does. In flight is
 * an up-down counter (the relays' sum means something); the waiting count is
 * a gauge (each relay counts the whole store: take the max, not the sum).
 */
import { metrics, ValueType, type BatchObservableCallback, type MeterProvider } from '@opentelemetry/api'
import { packageVersion } from '../package-version.js'
import { STORE_SECONDS_BUCKETS, WAITING_STATES, type RelayMetrics } from './metrics.js'

export const METER_NAME = 'agent-interlock'

export interface MetricsBridge {
  /** Unregisters the callback (the relay's stop): the SDK reads this relay no more. */
  close(): void
}

/**
 * Registers the instruments and the callback that reads `source`.
 * `meterProvider` defaults to the global one (`metrics.setGlobalMeterProvider`,
 * done by the SDK's setup, which must run before the relay starts).
 */
export function bridgeRelayMetrics(source: RelayMetrics, relay: string, meterProvider: MeterProvider = metrics.getMeterProvider()): MetricsBridge {
  const meter = meterProvider.getMeter(METER_NAME, packageVersion())
  const int = { valueType: ValueType.INT }
  const counter = (name: string, description: string) => meter.createObservableCounter(name, { description, unit: '{effect}', ...int })
  const effects = counter('interlock.relay.effects', 'Effects this relay finished working on, by target and outcome status.')
  const refused = counter('interlock.relay.effects.refused', 'Effects refused before sending, nothing sent, by target and reason (row-disagrees, unauthorized, journal).')
  const claimed = counter('interlock.relay.claimed', 'Effects claimed.')
  const claimQueries = meter.createObservableCounter('interlock.relay.claim_queries', { description: 'Claim queries sent to the store.', unit: '{query}', ...int })
  const leasesLost = meter.createObservableCounter('interlock.relay.leases_lost', { description: 'Leases another relay took over before this one finished.', unit: '{lease}', ...int })
  const storeErrors = meter.createObservableCounter('interlock.relay.store_errors', { description: 'Store operations that failed (the store unreachable or a write unconfirmed).', unit: '{error}', ...int })
  const errors = counter('interlock.relay.errors', 'Effects whose processing failed unexpectedly; they stay in the outbox.')
  const notices = meter.createObservableCounter('interlock.relay.notices', { description: 'Notices ([[notify]]) this relay journaled for operators.', unit: '{notice}', ...int })
  const notifyErrors = meter.createObservableCounter('interlock.relay.notify_errors', { description: 'Notices that could not be journaled, and notify passes that failed.', unit: '{error}', ...int })
  const inFlight = meter.createObservableUpDownCounter('interlock.relay.in_flight', { description: 'Effects claimed and not yet finished.', unit: '{effect}', ...int })
  const lastClaim = meter.createObservableGauge('interlock.relay.last_claim.timestamp', { description: 'When the last claim query answered (Unix seconds).', unit: 's' })
  const waiting = meter.createObservableGauge('interlock.relay.effects.waiting', {
    description: 'Effects in the store waiting for operators, by state (HELD, AMBIGUOUS), counted every few seconds; every relay on a store reports the same count.',
    unit: '{effect}',
    ...int,
  })
  const storeDuration = meter.createHistogram('interlock.relay.store.duration', {
    description: 'How long the store calls this relay made took, answered or failed, by operation.',
    unit: 's',
    advice: { explicitBucketBoundaries: [...STORE_SECONDS_BUCKETS] },
  })

  const observables = [effects, refused, claimed, claimQueries, leasesLost, storeErrors, errors, notices, notifyErrors, inFlight, lastClaim, waiting]
  const observe: BatchObservableCallback = (r) => {
    for (const [target, status, n] of source.outcomes.entries()) r.observe(effects, n, { relay, target, status })
    for (const [target, reason, n] of source.refusals.entries()) r.observe(refused, n, { relay, target, reason })
    const one = { relay }
    r.observe(claimed, source.claimed, one)
    r.observe(claimQueries, source.claimQueries, one)
    r.observe(leasesLost, source.leasesLost, one)
    r.observe(storeErrors, source.storeErrors, one)
    r.observe(errors, source.errors, one)
    r.observe(notices, source.notices, one)
    r.observe(notifyErrors, source.noticeErrors, one)
    r.observe(inFlight, source.inFlight, one)
    r.observe(lastClaim, source.lastClaimAt / 1000, one)
    const counted = source.waiting
    if (counted) for (const state of WAITING_STATES) r.observe(waiting, counted[state], { relay, state })
  }
  meter.addBatchObservableCallback(observe, observables)
  const listener = (operation: string, seconds: number) => storeDuration.record(seconds, { relay, operation })
  source.storeCallListener = listener
  return {
    close() {
      meter.removeBatchObservableCallback(observe, observables)
      if (source.storeCallListener === listener) source.storeCallListener = undefined
    },
  }
}
