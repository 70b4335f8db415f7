/**
 * `interlockSubmit` inside Temporal's MockActivityEnvironment (no Temporal
 * server can run here; see test/e2e/temporal.test.ts for the crash and
 * retry): the activity heartbeats while its effect waits, between the gate's
 * tries and while HELD; cancellation stops the wait; every outcome that is
 * not COMMITTED becomes the ApplicationFailure a workflow catches, retryable
 * only when the effect is in flight. A real SQLite journal and the HTTP
 * service of the demo, its faults switched on, are the parts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ApplicationFailure, CancelledFailure } from '@temporalio/common'
import { MockActivityEnvironment } from '@temporalio/testing'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { systemClock } from '../../src/core/clock.js'
import { parseConfig } from '../../src/core/config/load.js'
import { generateKeyPair } from '../../src/core/crypto/keys.js'
import { openInterlock, type Interlock } from '../../src/core/interlock.js'
import { releaseEffect } from '../../src/core/outbox/release.js'
import { Relay } from '../../src/core/relay/relay.js'
import type { Store } from '../../src/core/stores/store.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { activitySleep, FAILURE_TYPES, interlockSubmit } from '../../src/integrations/temporal/index.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'

const RUN = { workflowId: 'order-42', runId: '0b5e7c1e-8d7a-4f7e-9b8e-3f0f3a2c1d00' }
const alice = generateKeyPair('operator', 'alice')

let dir: string
let service: HttpService
let interlock: Interlock
let store: Store

/** Payouts (tier 1) and notices (tier 3) on the test's service; payouts above 500.00 wait for alice's release. */
const toml = (dir: string, url: string) => `
[store]
kind = "sqlite"
path = "${join(dir, 'journal.db')}"

[gate]
max_attempts = 20
backoff_ms = 200

[targets.payouts]
type = "http"
tier = 1
url = "${url}/idempotent"

[targets.notices]
type = "http"
tier = 3
url = "${url}/plain"

[[policy.rules]]
name = "big-payouts"
target = "payouts"
when = [{ arg = "amount", above = "500.00" }]
quorum = 1

[[operators]]
name = "alice"
public_key = "${alice.publicKey}"
`

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-temporal-'))
  service = await startHttpService()
  interlock = await openInterlock({ config: parseConfig(toml(dir, service.url), { file: join(dir, 'interlock.toml') }), sleep: activitySleep })
  store = interlock.store
})

afterEach(async () => {
  await interlock.close()
  await service.close()
  rmSync(dir, { recursive: true, force: true })
})

// The worker's log of every failed attempt, which the assertions read from the failures themselves.
const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} }

/** An environment for one attempt of activity `activityId` of the workflow run above. */
function attempt(n = 1, activityId = '7'): { env: { run<T>(fn: () => Promise<T>): Promise<T>; cancel(): void }; beats: Record<string, unknown>[] } {
  const mock = new MockActivityEnvironment({ workflowExecution: RUN, activityId, attempt: n }, { logger: silent })
  const beats: Record<string, unknown>[] = []
  mock.on('heartbeat', (d: Record<string, unknown>) => beats.push(d))
  const env = { run: <T>(fn: () => Promise<T>) => mock.run(fn) as Promise<T>, cancel: () => mock.cancel() }
  return { env, beats }
}

const payout = (amount = '20.00') => ({ target: 'payouts', action: 'pay', args: { to: 'acct_9', amount } })
const applied = () => Object.values(service.counts().idempotent).reduce((a, b) => a + b, 0)
const tries = () => service.requests().filter((r) => r.path === '/idempotent').length

async function failure(p: Promise<unknown>): Promise<ApplicationFailure> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(ApplicationFailure)
  return e as ApplicationFailure
}

describe('the effect of an activity', () => {
  it('is named by the workflow id, run id and activity id: the same on every attempt, and distinct per call within one', async () => {
    const run = (n: number) => {
      const { env } = attempt(n)
      return env.run(async () => [await interlockSubmit(interlock, payout()), await interlockSubmit(interlock, payout())])
    }
    const first = await run(1)
    const again = await run(2)
    expect(again.map((o) => o.effectId)).toEqual(first.map((o) => o.effectId))
    expect(first[0]!.effectId).not.toBe(first[1]!.effectId)
    expect(applied()).toBe(2)
    const snap = await store.get(first[1]!.effectId)
    expect(snap?.effect).toMatchObject({ thread: 'temporal:order-42', key: `${RUN.runId}/7/payouts.pay#2` })
  })

  it('heartbeats with its effect id while the gate waits between tries, and completes once', async () => {
    service.setFault({ kind: 'status', status: 503 }, { path: '/idempotent', times: 3 })
    const { env, beats } = attempt()
    const outcome = await env.run(() => interlockSubmit(interlock, payout(), { heartbeatMs: 50 }))
    expect(outcome.status).toBe('committed')
    expect(tries()).toBe(4)
    expect(applied()).toBe(1)
    // Three back-offs of 200, 400 and 800 ms at 50 ms a beat.
    expect(beats.length).toBeGreaterThanOrEqual(10)
    expect(new Set(beats.map((b) => JSON.stringify(b)))).toEqual(new Set([JSON.stringify({ interlockEffectId: outcome.effectId, waiting: 'submit' })]))
  })

  it('cancelled while the gate waits between tries, stops: CancelledFailure, and no further try is sent', async () => {
    service.setFault({ kind: 'status', status: 503 }, { path: '/idempotent' })
    const { env, beats } = attempt()
    const running = env.run(() => interlockSubmit(interlock, payout(), { heartbeatMs: 20 }))
    await until(() => tries() >= 2)
    env.cancel()
    await expect(running).rejects.toBeInstanceOf(CancelledFailure)
    const sent = tries()
    await new Promise((r) => setTimeout(r, 1_000))
    expect(tries()).toBe(sent)
    expect(beats.length).toBeGreaterThan(0)
  })

  it('HELD for operators, waits heartbeating `held`; released with `outbox release`, it is sent and the activity completes', async () => {
    const { env, beats } = attempt()
    const running = env.run(() => interlockSubmit(interlock, payout('900.00'), { heartbeatMs: 20, poll: { firstMs: 50, maxMs: 200 } }))
    await until(() => beats.some((b) => b.waiting === 'held'))
    const effectId = String(beats.at(-1)!.interlockEffectId)
    expect((await store.get(effectId))?.state).toBe('HELD')
    expect(tries()).toBe(0)
    await releaseEffect({ store, operators: interlock.operators, policy: interlock.policy, key: alice, clock: systemClock }, effectId)
    const outcome = await running
    expect(outcome).toMatchObject({ status: 'committed', effectId })
    expect(applied()).toBe(1)
  })

  it('HELD and cancelled, throws CancelledFailure; nothing was sent and the effect stays HELD', async () => {
    const { env, beats } = attempt()
    const running = env.run(() => interlockSubmit(interlock, payout('900.00'), { heartbeatMs: 20, poll: { firstMs: 50, maxMs: 200 } }))
    await until(() => beats.some((b) => b.waiting === 'held'))
    env.cancel()
    await expect(running).rejects.toBeInstanceOf(CancelledFailure)
    expect(tries()).toBe(0)
    expect((await store.get(String(beats.at(-1)!.interlockEffectId)))?.state).toBe('HELD')
  })

  it("with held: 'return', HELD is returned to the workflow, which waits for the release itself", async () => {
    const { env } = attempt()
    const outcome = await env.run(() => interlockSubmit(interlock, payout('900.00'), { held: 'return' }))
    expect(outcome).toMatchObject({ status: 'held', rule: 'big-payouts' })
    expect(tries()).toBe(0)
  })
})

describe('outbox mode', () => {
  it('the activity only proposes; while no relay has sent it the attempt is in flight (retryable), and once one has, the next attempt gets its outcome', async () => {
    const f = await failure(attempt(1).env.run(() => interlockSubmit(interlock, payout(), { mode: 'outbox', waitMs: 200 })))
    expect(f).toMatchObject({ type: FAILURE_TYPES.inFlight, nonRetryable: false })
    expect(tries()).toBe(0)
    const targets = createTargets(interlock.config.targets)
    const relay = new Relay({ store, targets: targets.values(), relayId: 'relay-1', key: generateKeyPair('relay', 'relay-1'), policy: interlock.policy, pollMs: 50, log: () => {} })
    await relay.start()
    try {
      const outcome = await attempt(2).env.run(() => interlockSubmit(interlock, payout(), { mode: 'outbox', waitMs: 10_000 }))
      expect(outcome).toMatchObject({ status: 'committed', effectId: (f.details![0] as { effectId: string }).effectId })
    } finally {
      await relay.stop()
      for (const t of targets.values()) await t.close?.()
    }
    expect(applied()).toBe(1)
  })
})

describe('outcomes that are not COMMITTED, as the ApplicationFailure a workflow catches', () => {
  it('AMBIGUOUS: non-retryable InterlockAmbiguous, naming the effect and the resolve command', async () => {
    service.setFault({ kind: 'status', status: 502 }, { path: '/plain', times: 1 })
    const { env } = attempt()
    const f = await failure(env.run(() => interlockSubmit(interlock, { target: 'notices', action: 'notify', args: { order: 'o-1' } })))
    expect(f).toMatchObject({ type: FAILURE_TYPES.ambiguous, nonRetryable: true })
    const detail = f.details![0] as Record<string, string>
    expect(detail).toMatchObject({ status: 'ambiguous', thread: 'temporal:order-42', target: 'notices', action: 'notify' })
    expect(f.message).toContain(`interlock outbox resolve ${detail.effectId} --applied`)
    // A retried attempt does not send it again: the same failure.
    const retried = await failure(attempt(2).env.run(() => interlockSubmit(interlock, { target: 'notices', action: 'notify', args: { order: 'o-1' } })))
    expect(retried).toMatchObject({ type: FAILURE_TYPES.ambiguous, nonRetryable: true })
    expect(service.requests().filter((r) => r.path === '/plain')).toHaveLength(1)
  })

  it('REJECTED (a premise pushed down to the service failed): non-retryable InterlockRejected with the violations', async () => {
    service.setFault({ kind: 'status', status: 412, body: { error: { message: 'the account changed' } } }, { path: '/idempotent', times: 1 })
    const f = await failure(attempt().env.run(() => interlockSubmit(interlock, payout())))
    expect(f).toMatchObject({ type: FAILURE_TYPES.rejected, nonRetryable: true })
    expect((f.details![0] as { violations: string[] }).violations.join(' ')).toContain('412')
  })

  it('FAILED (the service refused it): non-retryable InterlockFailed with its reason', async () => {
    service.setFault({ kind: 'status', status: 400, body: { error: { message: 'no such account' } } }, { path: '/idempotent', times: 1 })
    const f = await failure(attempt().env.run(() => interlockSubmit(interlock, payout())))
    expect(f).toMatchObject({ type: FAILURE_TYPES.failed, nonRetryable: true })
    expect(f.message).toContain('no such account')
  })

  it('in flight (the service asks to wait longer than the gate waits in place): retryable InterlockInFlight, its wait as nextRetryDelay', async () => {
    service.setFault({ kind: 'status', status: 429, retryAfter: '120' }, { path: '/idempotent', times: 1 })
    const f = await failure(attempt().env.run(() => interlockSubmit(interlock, payout())))
    expect(f).toMatchObject({ type: FAILURE_TYPES.inFlight, nonRetryable: false })
    expect(Number(f.nextRetryDelay)).toBeGreaterThan(110_000)
    expect(Number(f.nextRetryDelay)).toBeLessThanOrEqual(120_000)
    expect(applied()).toBe(0)
  })

  it('refused for what it is (an unknown target, bad args): non-retryable InterlockRefused, nothing journaled', async () => {
    const f = await failure(attempt().env.run(() => interlockSubmit(interlock, { target: 'nowhere', action: 'pay', args: {} })))
    expect(f).toMatchObject({ type: FAILURE_TYPES.refused, nonRetryable: true })
    expect(await store.list()).toEqual([])
  })
})

describe('activitySleep', () => {
  it('outside an activity is a plain timer', async () => {
    const t = Date.now()
    await activitySleep(50)
    expect(Date.now() - t).toBeGreaterThanOrEqual(45)
  })
})

async function until(ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 10))
  }
}
