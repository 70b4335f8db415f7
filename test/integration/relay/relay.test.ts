/**
 * The relay in-process, on real SQLite and PostgreSQL: outbox submit, drain,
 * signed receipts, holds, premises, fencing against a relay whose lease ran
 * out, two relays on one store, /healthz and /metrics.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { verifyStatement } from '../../../src/core/crypto/sign.js'
import type { EffectInput, Tier } from '../../../src/core/effect.js'
import { systemClock } from '../../../src/core/clock.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { releaseEffect } from '../../../src/core/outbox/release.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay, type RelayOptions } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

const key = generateKeyPair('relay', 'relay-test')
let dir: string
let pgDb: TestDatabase
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-relay-'))
  pgDb = await createTestDatabase()
})
afterAll(async () => {
  await pgDb?.drop()
  rmSync(dir, { recursive: true, force: true })
})

let n = 0
const stores: [string, () => StoreConfig][] = [
  ['SQLite', () => ({ kind: 'sqlite', path: join(dir, `relay-${++n}.db`) })],
  ['PostgreSQL', () => ({ kind: 'postgres', url: pgDb.url, schema: `relay_${++n}` })],
]

const input = (i: number, target = 't1', thread = 'agent'): EffectInput => ({ thread, target, action: 'do', args: { i } })

function relay(store: Store, targets: CountingTarget[], over: Partial<RelayOptions> = {}): Relay {
  return new Relay({ store, targets, relayId: 'r1', key, policy: new RulesPolicy([]), pollMs: 20, leaseMs: 5_000, retry: { maxAttempts: 3, backoffMs: 5 }, ...over })
}

describe.each(stores)('relay on %s', (_name, config) => {
  async function open(): Promise<Store> {
    return openStore(config(), { autoInstall: true })
  }

  it('drains what the outbox journaled; result() waits for the outcome; every record it writes is under its seal', async () => {
    const store = await open()
    const targets = ([1, 2, 3] as Tier[]).map((t) => new CountingTarget(`t${t}`, t))
    const outbox = new Outbox({ store, targets })
    const handles = await Promise.all(targets.flatMap((t) => [0, 1, 2].map((i) => outbox.submit(input(i, t.name)))))
    // The agent only proposes: the relay authorizes.
    expect(handles.every((h) => h.state === 'PROPOSED')).toBe(true)
    expect(targets.every((t) => t.calls.size === 0)).toBe(true)
    const r = relay(store, targets)
    await r.start()
    const outcomes = await Promise.all(handles.map((h) => h.result()))
    expect(outcomes.map((o) => o.status)).toEqual(Array(9).fill('committed'))
    for (const t of targets) for (const [id, count] of t.applied) expect(count, id).toBe(1)
    const history = await store.history(handles[0]!.effectId)
    expect(history.map((h) => h.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    // Every record the relay wrote is under one of its seals, which verifies with its key and binds the record's hash.
    const seals = await store.seals()
    for (const r of history.slice(1)) {
      const [seal, ...more] = seals.filter((s) => s.statement.records.includes(r.hash))
      expect(more, r.state).toEqual([])
      expect(seal, r.state).toMatchObject({ publicKey: key.publicKey, statement: { kind: 'seal', signer: 'r1', role: 'relay' } })
      expect(verifyStatement(seal!.statement, seal!.signature, key.publicKey)).toBe(true)
      expect(verifyStatement({ ...seal!.statement, records: [...seal!.statement.records, '0'.repeat(64)] }, seal!.signature, key.publicKey)).toBe(false)
    }
    const stats = await r.stop()
    expect(stats).toMatchObject({ claimed: 9, finished: 9, byStatus: { committed: 9 } })
    const [beat] = await store.relays()
    expect(beat).toMatchObject({ relay: 'r1', info: { state: 'stopped', finished: 9 } })
    await outbox.close()
    await store.close()
  })

  it('the relay holds by its own policy: a held effect waits for operators (result: held); a changed world rejects before dispatch', async () => {
    const store = await open()
    const t = new CountingTarget('t1', 1)
    const outbox = new Outbox({ store, targets: [t] })
    const held = await outbox.submit(input(0))
    expect(held.state).toBe('PROPOSED')
    t.violations = ['balance changed']
    const stale = await outbox.submit(input(1))
    const policy = new RulesPolicy([{ name: 'big', target: 't1', when: [{ arg: 'i', atMost: '0' }], quorum: 1, releaseTtlMs: 60_000 }])
    const r = relay(store, [t], { policy })
    await r.start()
    expect(await held.result()).toEqual({ status: 'held', effectId: held.effectId, rule: 'big', reason: 'args.i 0 is at most 0' })
    expect(await stale.result()).toMatchObject({ status: 'rejected', violations: ['balance changed'] })
    expect(t.calls.size).toBe(0)
    await r.stop()
    await outbox.close()
    await store.close()
  })

  it('a held effect does not keep the relay\'s lease: released by an operator, it is sent at once, not after lease_ms', async () => {
    const store = await open()
    const t = new CountingTarget('t1', 1)
    const outbox = new Outbox({ store, targets: [t] })
    const h = await outbox.submit(input(0))
    const policy = new RulesPolicy([{ name: 'big', target: 't1', when: [{ arg: 'i', atMost: '0' }], quorum: 1, releaseTtlMs: 60_000 }])
    const alice = generateKeyPair('operator', 'alice')
    const operators = [{ name: 'alice', publicKey: alice.publicKey }]
    // A lease far longer than the test may take: only a lease given back lets the release through in time.
    const r = relay(store, [t], { policy, operators, leaseMs: 60_000 })
    await r.start()
    try {
      expect(await h.result()).toMatchObject({ status: 'held' })
      const released = await releaseEffect({ store, operators, policy, key: alice, clock: systemClock }, h.effectId)
      expect(released.state).toBe('AUTHORIZED')
      const started = Date.now()
      await until(() => t.count(h.effectId) === 1, 10_000)
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(await outbox.result(h.effectId)).toMatchObject({ status: 'committed' })
    } finally {
      await r.stop()
      await outbox.close()
      await store.close()
    }
  })

  it('a relay that claims an effect again while an older claim of it is still on its way works from the new claim: nothing refused, sent once', async () => {
    const store = await open()
    const outbox = new Outbox({ store, targets: [new CountingTarget('t1', 1)] })
    const h = await outbox.submit(input(3))
    // Relay A: its first look at the journal waits (a stopped process), and it renews nothing meanwhile.
    let releaseRead!: () => void
    const readWaits = new Promise<void>((resolve) => (releaseRead = resolve))
    let reads = 0
    const slow = delegate(store, {
      renewLease: () => new Promise<string[]>(() => {}),
      history: async (id) => {
        if (++reads === 1) await readWaits
        return store.history(id)
      },
    })
    const tA = new CountingTarget('t1', 1)
    const a = relay(slow, [tA], { relayId: 'A', leaseMs: 1_000, concurrency: 1 })
    await a.start()
    await until(() => reads === 1)
    // A's lease runs out; relay B takes the effect to DISPATCHED, its one try's outcome unknown, and stops.
    await new Promise((r) => setTimeout(r, 1_200))
    const tB = new CountingTarget('t1', 1)
    tB.faults = [{ kind: 'unknown' }]
    const b = relay(store, [tB], { relayId: 'B', leaseMs: 1_000, retry: { maxAttempts: 1, backoffMs: 0 } })
    await b.start()
    await until(() => tB.calls.get(h.effectId) === 1)
    await b.stop()
    // B's lease runs out too; A claims the effect again (DISPATCHED now) while its first claim is still reading.
    await new Promise((r) => setTimeout(r, 1_200))
    await until(() => a.metrics.claimed === 2)
    releaseRead()
    await until(() => tA.count(h.effectId) === 1, 5_000)
    expect(await outbox.result(h.effectId)).toMatchObject({ status: 'committed' })
    const stats = await a.stop()
    expect(stats.refused ?? 0).toBe(0)
    expect(tA.calls.get(h.effectId)).toBe(1)
    await outbox.close()
    await store.close()
  })

  it('a relay whose lease ran out (paused) neither applies nor commits; the relay that took over does, once', async () => {
    const store = await open()
    const t = new CountingTarget('t1', 2)
    const outbox = new Outbox({ store, targets: [t] })
    const h = await outbox.submit(input(7))
    // Relay A: stops inside premise validation (as SIGSTOP would), past its lease.
    let clockA = 0
    let releaseA!: () => void
    const gateA = new Promise<void>((resolve) => (releaseA = resolve))
    const tA = new CountingTarget('t1', 2)
    tA.validatePremises = async () => {
      await gateA
      return []
    }
    // A stopped process renews nothing: A's renewals never reach the store.
    const frozen = delegate(store, { renewLease: () => new Promise<string[]>(() => {}) })
    const a = relay(frozen, [tA], { relayId: 'A', leaseMs: 200, monotonic: () => clockA })
    await a.start()
    await until(() => a.metrics.claimed === 1)
    await new Promise((r) => setTimeout(r, 300))
    // Relay B takes over the expired lease and finishes the effect.
    const b = relay(store, [t], { relayId: 'B', leaseMs: 5_000 })
    await b.start()
    expect(await h.result()).toMatchObject({ status: 'committed' })
    // A resumes: its DISPATCHED append carries a stale token and loses; it never applies.
    clockA = 10_000
    releaseA()
    await a.stop()
    await b.stop()
    expect(tA.calls.size).toBe(0)
    expect(t.count(h.effectId)).toBe(1)
    expect((await store.history(h.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    await outbox.close()
    await store.close()
  })

  it('a relay whose lease runs out while its request waits to be written sends nothing; the relay that took over applies once', async () => {
    const store = await open()
    const t = new CountingTarget('t1', 2)
    const outbox = new Outbox({ store, targets: [t] })
    const h = await outbox.submit(input(9))
    // Relay A passes its lease check before apply, then stalls where a request waits for its
    // connection (as a SIGSTOP there would), past its lease.
    let clockA = 0
    let releaseA!: () => void
    const stalled = new Promise<void>((resolve) => (releaseA = resolve))
    const tA = new CountingTarget('t1', 2)
    tA.onApply = () => stalled
    // A stopped process neither renews nor claims again.
    let stopped = false
    const frozen = delegate(store, {
      renewLease: () => new Promise<string[]>(() => {}),
      claim: (req) => (stopped ? Promise.resolve([]) : store.claim(req)),
    })
    const a = relay(frozen, [tA], { relayId: 'A', leaseMs: 200, monotonic: () => clockA })
    await a.start()
    await until(() => tA.calls.size === 1)
    stopped = true
    expect((await store.get(h.effectId))?.state).toBe('DISPATCHED')
    await new Promise((r) => setTimeout(r, 300))
    // Relay B takes over the expired lease, asks the service (not applied) and applies.
    const b = relay(store, [t], { relayId: 'B', leaseMs: 5_000 })
    await b.start()
    expect(await h.result()).toMatchObject({ status: 'committed' })
    expect(t.queries).toContain(h.effectId)
    // A resumes: its fence, asked right before the write, says no; it sends nothing.
    clockA = 10_000
    releaseA()
    await a.stop()
    await b.stop()
    expect(tA.calls.get(h.effectId)).toBe(1)
    expect(tA.count(h.effectId)).toBe(0)
    expect(t.count(h.effectId)).toBe(1)
    expect(a.metrics.leasesLost).toBeGreaterThanOrEqual(1)
    expect((await store.history(h.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    await outbox.close()
    await store.close()
  })

  it('a relay whose local deadline passed after DISPATCHED does not apply', async () => {
    const store = await open()
    const t = new CountingTarget('t1', 2)
    const outbox = new Outbox({ store, targets: [t] })
    const h = await outbox.submit(input(8))
    let clock = 0
    // The premise check is the last step before DISPATCHED: time jumps there, as if the process had been stopped.
    t.validatePremises = async () => {
      clock = 1_000_000
      return []
    }
    const a = relay(store, [t], { relayId: 'A', leaseMs: 60_000, monotonic: () => clock })
    await a.start()
    await until(() => a.metrics.leasesLost > 0)
    await a.stop()
    expect(t.calls.size).toBe(0)
    expect((await store.get(h.effectId))!.state).toBe('DISPATCHED')
    await outbox.close()
    await store.close()
  })

  it('two relays on one store: every effect applied exactly once, per-target concurrency bounded', async () => {
    const store = await open()
    const other = await open()
    const t1 = new CountingTarget('t1', 3)
    const t2 = new CountingTarget('t1', 3)
    let live = 0
    let peak = 0
    for (const t of [t1, t2]) {
      t.onApply = async () => {
        peak = Math.max(peak, ++live)
        await new Promise((r) => setTimeout(r, 1))
        live--
      }
    }
    const outbox = new Outbox({ store, targets: [t1] })
    const handles = []
    for (let i = 0; i < 200; i++) handles.push(await outbox.submit(input(i, 't1', `thread-${i % 7}`)))
    const a = relay(store, [t1], { relayId: 'A', concurrency: 4 })
    const b = relay(other, [t2], { relayId: 'B', concurrency: 4 })
    await Promise.all([a.start(), b.start()])
    const outcomes = await Promise.all(handles.map((h) => h.result()))
    expect(outcomes.every((o) => o.status === 'committed')).toBe(true)
    await Promise.all([a.stop(), b.stop()])
    for (const h of handles) expect((t1.calls.get(h.effectId) ?? 0) + (t2.calls.get(h.effectId) ?? 0), h.effectId).toBe(1)
    expect(peak).toBeLessThanOrEqual(8)
    expect(a.metrics.total() + b.metrics.total()).toBe(200)
    await outbox.close()
    await other.close()
    await store.close()
  })

  it('serves /healthz and Prometheus /metrics', async () => {
    const store = await open()
    const t = new CountingTarget('t1', 1)
    const outbox = new Outbox({ store, targets: [t] })
    const r = relay(store, [t], { healthPort: 0 })
    await r.start()
    await (await outbox.submit(input(1))).result()
    // The outcome is durable before the relay's own bookkeeping of it; wait for the latter.
    await until(() => r.metrics.total() === 1 && r.metrics.inFlight === 0)
    const base = `http://127.0.0.1:${r.healthPort}`
    const health = await fetch(`${base}/healthz`)
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ status: 'ok', relay: 'r1', finished: 1 })
    const metrics = await (await fetch(`${base}/metrics`)).text()
    expect(metrics).toContain('# TYPE interlock_relay_effects_total counter')
    expect(metrics).toContain('interlock_relay_effects_total{relay="r1",target="t1",status="committed"} 1')
    expect(metrics).toMatch(/interlock_relay_in_flight\{relay="r1"\} 0/)
    expect(metrics).toMatch(/interlock_relay_last_claim_timestamp_seconds\{relay="r1"\} \d+/)
    expect((await fetch(`${base}/nope`)).status).toBe(404)
    await r.stop()
    await outbox.close()
    await store.close()
  })
})

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** The store with some methods replaced; the rest bound to the store itself. */
function delegate(store: Store, overrides: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop in overrides) return overrides[prop as keyof Store]
      const v = Reflect.get(target, prop, receiver)
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
}
