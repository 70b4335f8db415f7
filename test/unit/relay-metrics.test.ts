/**
 * RelayMetrics' exposition of what this work added: the store-duration
 * histogram (a value on a bound counts in that bucket, buckets cumulative,
 * "+Inf" equal to the count) and the HELD / AMBIGUOUS gauge (absent until
 * first counted, rather than a 0 nobody measured).
 */
import { describe, expect, it } from 'vitest'
import { RelayMetrics, STORE_SECONDS_BUCKETS } from '../../src/core/relay/metrics.js'
import { parseExposition } from '../helpers/relay-metrics.js'

describe('RelayMetrics exposition', () => {
  it('the store-duration histogram: le inclusive, cumulative buckets, +Inf = count, sum of the values', () => {
    const m = new RelayMetrics()
    for (const s of [0.001, 0.0011, 0.0004, 20]) m.storeCall('append', s)
    m.storeCall('claim', 0.3)
    const { types, samples } = parseExposition(m.exposition('r1'))
    expect(types.get('interlock_relay_store_duration_seconds')).toBe('histogram')
    const bucket = (op: string, le: string) => samples.get(`interlock_relay_store_duration_seconds_bucket{le="${le}",operation="${op}",relay="r1"}`)
    expect(bucket('append', '0.001')).toBe(2)
    expect(bucket('append', '0.0025')).toBe(3)
    expect(bucket('append', '10')).toBe(3)
    expect(bucket('append', '+Inf')).toBe(4)
    expect(samples.get('interlock_relay_store_duration_seconds_count{operation="append",relay="r1"}')).toBe(4)
    expect(samples.get('interlock_relay_store_duration_seconds_sum{operation="append",relay="r1"}')).toBeCloseTo(20.0025, 10)
    expect(bucket('claim', '0.25')).toBe(0)
    expect(bucket('claim', '0.5')).toBe(1)
    // One series per operation, every bound and +Inf.
    expect([...samples.keys()].filter((k) => k.startsWith('interlock_relay_store_duration_seconds_bucket{')).length).toBe(2 * (STORE_SECONDS_BUCKETS.length + 1))
  })

  it('HELD and AMBIGUOUS waiting: declared but without samples until counted, then one per state', () => {
    const m = new RelayMetrics()
    const before = parseExposition(m.exposition('r1'))
    expect(before.types.get('interlock_relay_effects_waiting')).toBe('gauge')
    expect([...before.samples.keys()].filter((k) => k.startsWith('interlock_relay_effects_waiting'))).toEqual([])
    m.waiting = { HELD: 3, AMBIGUOUS: 1 }
    const after = parseExposition(m.exposition('r1')).samples
    expect(after.get('interlock_relay_effects_waiting{relay="r1",state="HELD"}')).toBe(3)
    expect(after.get('interlock_relay_effects_waiting{relay="r1",state="AMBIGUOUS"}')).toBe(1)
  })

  it('label values are escaped: a target or operation name with a quote or backslash stays one sample', () => {
    const m = new RelayMetrics()
    m.outcome('we"ird\\t', 'committed')
    const { samples } = parseExposition(m.exposition('r1'))
    expect(samples.get('interlock_relay_effects_total{relay="r1",status="committed",target="we"ird\\t"}')).toBe(1)
  })
})
