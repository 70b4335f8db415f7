/** A failing store operation in the relay's log: once, a reminder at a bounded interval, then its recovery; and the /healthz verdict. */
import { describe, expect, it } from 'vitest'
import { StoreUnavailableError } from '../../src/core/errors.js'
import { Conditions } from '../../src/core/relay/conditions.js'
import { pgError } from '../../src/core/stores/postgres/errors.js'
import { healthStatus } from '../../src/core/relay/progress.js'
import { RelayLog } from '../../src/core/relay/relay-log.js'

function harness(reminderMs = 60_000) {
  let t = 0
  const lines: string[] = []
  const log = new RelayLog({ relay: 'r1', format: 'json', write: (l) => lines.push(l), scrub: (s) => s.replaceAll('hunter2', '***'), now: () => new Date(Date.UTC(2030, 0, 1) + t) })
  const conditions = new Conditions(log, () => t, reminderMs)
  return { conditions, lines, at: (ms: number) => (t = ms), events: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) }
}

describe('failing conditions', () => {
  it('one line when it starts, at most one reminder per interval however often it fails, one line when it recovers', () => {
    const h = harness()
    for (let ms = 0; ms <= 150_000; ms += 500) {
      h.at(ms)
      h.conditions.failed('claim', 'claiming effects', new Error(ms < 100_000 ? 'permission denied for table effects (password hunter2)' : 'connection refused'))
    }
    h.at(151_000)
    h.conditions.ok('claim')
    h.conditions.ok('claim')
    const events = h.events()
    expect(events.map((e) => e.event)).toEqual(['failing', 'still-failing', 'still-failing', 'recovered'])
    expect(events[0]).toMatchObject({ level: 'error', condition: 'claim', reason: 'permission denied for table effects (password ***)' })
    expect(events[0]!.msg).toBe('claiming effects failed: permission denied for table effects (password ***); retrying')
    expect(events[1]).toMatchObject({ failingMs: 60_000, attempts: 121, msg: 'claiming effects still failing after 60 s, 121 attempts: permission denied for table effects (password ***)' })
    // The reminder carries the latest error.
    expect(events[2]).toMatchObject({ failingMs: 120_000, reason: 'connection refused' })
    expect(events[3]).toMatchObject({ level: 'info', failingMs: 151_000, attempts: 301, msg: 'claiming effects recovered after 151 s, 301 failed attempts' })
    expect(events.every((e) => e.relay === 'r1' && typeof e.time === 'string')).toBe(true)
  })

  it('each operation is its own condition: a heartbeat that succeeds does not clear failing claims', () => {
    const h = harness()
    h.conditions.failed('claim', 'claiming effects', new Error('lock timeout'))
    h.at(5_000)
    h.conditions.ok('heartbeat')
    h.at(9_000)
    expect(h.conditions.longest(['claim', 'renew'])).toMatchObject({ key: 'claim', failingMs: 9_000, attempts: 1, lastError: 'lock timeout' })
    expect(h.conditions.longest(['heartbeat'])).toBeUndefined()
    expect(h.events().map((e) => e.event)).toEqual(['failing'])
  })
})

describe('an unreachable store', () => {
  it('is told from a slow one by the error: refused or dropped connections, a standby, no host qualifying; not a lock timeout', () => {
    const h = harness()
    const refused = pgError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), 'claiming effects', 'db')
    expect(refused).toBeInstanceOf(StoreUnavailableError)
    h.conditions.failed('claim', 'claiming effects', refused)
    expect(h.conditions.unreachable(['claim'])).toMatchObject({ key: 'claim', unreachable: true })
    h.conditions.failed('claim', 'claiming effects', pgError(Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }), 'claiming effects', 'db'))
    expect(h.conditions.unreachable(['claim'])).toBeUndefined()
    for (const code of ['08001', '08006', '57P01', '25006']) {
      h.conditions.failed('claim', 'claiming effects', pgError(Object.assign(new Error(code), { code }), 'claiming effects', 'db'))
      expect(h.conditions.unreachable(['claim']), code).toBeDefined()
    }
    h.conditions.ok('claim')
    expect(h.conditions.unreachable(['claim'])).toBeUndefined()
  })
})

describe('/healthz verdict', () => {
  const base = { stopping: false, idle: false, stallMs: 1_000, view: { sinceProgressMs: 0 } }
  it('ok while progress is recent; stalled when work waits and nothing moved; idle is never stalled', () => {
    expect(healthStatus(base)).toBe('ok')
    expect(healthStatus({ ...base, view: { sinceProgressMs: 1_000 } })).toBe('stalled')
    expect(healthStatus({ ...base, idle: true, view: { sinceProgressMs: 60_000 } })).toBe('ok')
  })

  it('a store call pending too long, or a work operation failing too long, is unhealthy even when idle; draining says so first', () => {
    expect(healthStatus({ ...base, idle: true, view: { sinceProgressMs: 0, pending: { what: 'claim', ms: 1_000 } } })).toBe('store call pending')
    expect(healthStatus({ ...base, idle: true, view: { sinceProgressMs: 0, pending: { what: 'claim', ms: 999 } } })).toBe('ok')
    const failing = { key: 'claim', what: 'claiming effects', failingMs: 1_500, attempts: 4, lastError: 'x', unreachable: false }
    expect(healthStatus({ ...base, idle: true, failing })).toBe('store failing')
    expect(healthStatus({ ...base, stopping: true, failing })).toBe('draining')
  })

  it('a work operation that could not reach the store at all is unhealthy at once (a primary dead, no standby promoted yet)', () => {
    const unreachable = { key: 'claim', what: 'claiming effects', failingMs: 10, attempts: 1, lastError: 'no host accepted a read-write session', unreachable: true }
    expect(healthStatus({ ...base, idle: true, failing: unreachable, unreachable })).toBe('store unreachable')
    expect(healthStatus({ ...base, stopping: true, failing: unreachable, unreachable })).toBe('draining')
  })
})
