/**
 * `agent-interlock/temporal` as a worker runs it: the example's activities
 * (examples/temporal/activities.ts, from the built package) run in
 * Temporal's MockActivityEnvironment, one process per attempt. No Temporal
 * server can run here (its CLI is downloaded at run time from a host this
 * build cannot reach), so Temporal's retry is simulated as the server does
 * it: the next attempt is the same activity id in the same workflow run,
 * `attempt` one higher, in a new process. The first attempt is SIGKILLed
 * after its effect was applied (INTERLOCK_CRASH_AT=after-apply), before the
 * activity completed. Truth is the services' own ledgers:
 *
 * - tier 1 (Stripe): the second attempt finds the refund, applied once;
 * - tier 3 (the notices): the second attempt fails with a non-retryable
 *   `InterlockAmbiguous` ApplicationFailure, and nothing is sent again.
 *
 * The counter-test runs the same activities without Interlock: the same
 * crash applies the refund, and the notice, twice.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'
import { runTsChild } from '../helpers/child.js'
import { exampleProject, type ExampleProject } from '../helpers/example-project.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import { StripeEmulator } from '../emulators/stripe.js'

const STRIPE_KEY = 'sk_test_temporal_example_key_0001'
const runner = join(import.meta.dirname, '../fixtures/temporal/attempt.ts')
const bare = join(import.meta.dirname, '../fixtures/temporal/bare-activities.ts')

let stripe: StripeEmulator
let notices: HttpService
let project: ExampleProject

beforeAll(async () => {
  assertCliBuilt()
  ;[stripe, notices] = await Promise.all([new StripeEmulator(STRIPE_KEY).start(), startHttpService()])
  project = exampleProject('temporal', ['@temporalio/activity', '@temporalio/common'])
})

afterAll(async () => {
  await Promise.allSettled([stripe?.close(), notices?.close()])
  project?.cleanup()
})

let orders = 0
function newOrder() {
  const n = ++orders
  stripe.seedCharge({ id: `ch_3Temporal${n}`, amount: 100_000, currency: 'usd' })
  return { order: `o-${n}`, charge: `ch_3Temporal${n}`, amount: '12.50', currency: 'usd' }
}

interface Attempt {
  ok: boolean
  value?: Record<string, unknown>
  name?: string
  message?: string
  type?: string
  nonRetryable?: boolean
  details?: Record<string, unknown>[]
}

/** One attempt of `activity` in workflow run wf-<order>, activity id 1. */
async function attempt(file: string, activity: string, order: ReturnType<typeof newOrder>, n: number, crash: Record<string, string> = {}) {
  const info = { workflowExecution: { workflowId: `wf-${order.order}`, runId: '6b1a1d6e-5b0e-4d3c-9a53-0d4bd0c3b2a1' }, activityId: '1', attempt: n, activityType: activity }
  return runTsChild(runner, [file, activity], {
    INTERLOCK_CONFIG: join(project.dir, 'interlock.toml'),
    STRIPE_API_KEY: STRIPE_KEY,
    STRIPE_URL: stripe.url,
    NOTICES_URL: notices.url,
    ATTEMPT_INFO: JSON.stringify(info),
    ATTEMPT_INPUT: JSON.stringify(order),
    ...crash,
  })
}

/** Attempt 1 dies at `crash`; attempt 2, in a new process, is what the activity comes to. */
async function crashThenRetry(file: string, activity: string, order: ReturnType<typeof newOrder>, crash: Record<string, string>): Promise<Attempt> {
  const first = await attempt(file, activity, order, 1, crash)
  expect(first.signal, `attempt 1 did not die:\n${first.stdout}${first.stderr}`).toBe('SIGKILL')
  const second = await attempt(file, activity, order, 2)
  expect(second.code, second.stderr).toBe(0)
  return JSON.parse(second.stdout.trim().split('\n').at(-1)!) as Attempt
}

describe('the Temporal example activities, the worker SIGKILLed after the effect, the activity retried', { timeout: 180_000 }, () => {
  const activities = () => join(project.dir, 'activities.ts')

  it('tier 1: the retried refund activity finds the refund by its effect id and completes; Stripe refunded once', async () => {
    const order = newOrder()
    const result = await crashThenRetry(activities(), 'refund', order, { INTERLOCK_CRASH_AT: 'after-apply' })
    expect(result.ok, JSON.stringify(result)).toBe(true)
    const refunds = stripe.refunds.filter((r) => r.charge === order.charge)
    expect(refunds).toHaveLength(1)
    expect(result.value).toEqual({ refund: refunds[0]!.id, effect: refunds[0]!.metadata.interlock_effect_id })
    expect(stripe.requests.filter((r) => r.method === 'POST' && r.idempotencyKey === result.value!.effect)).toHaveLength(1)
  })

  it('tier 3: the retried notice activity fails with a non-retryable InterlockAmbiguous naming the effect; the notice was sent once', async () => {
    const order = newOrder()
    const before = new Set(Object.keys(notices.counts().plain))
    const result = await crashThenRetry(activities(), 'notify', order, { INTERLOCK_CRASH_AT: 'after-apply' })
    const sent = Object.entries(notices.counts().plain).filter(([effect]) => !before.has(effect))
    expect(sent).toHaveLength(1)
    const [notice, times] = sent[0]!
    expect(times).toBe(1)
    expect(result).toMatchObject({ ok: false, name: 'ApplicationFailure', type: 'InterlockAmbiguous', nonRetryable: true })
    expect(result.details![0]).toMatchObject({
      effectId: notice,
      status: 'ambiguous',
      thread: `temporal:wf-${order.order}`,
      key: '6b1a1d6e-5b0e-4d3c-9a53-0d4bd0c3b2a1/1/notices.notify#1',
      command: `interlock outbox resolve ${notice} --applied (or --not-applied)`,
    })
    expect(result.message).toContain(`AMBIGUOUS: this call (notify on notices, effect ${notice}) was sent`)
  })

  it('a later attempt of an activity that completed sends nothing again', async () => {
    const order = newOrder()
    const first = await attempt(activities(), 'refund', order, 1)
    const again = await attempt(activities(), 'refund', order, 2)
    expect(JSON.parse(again.stdout)).toEqual(JSON.parse(first.stdout))
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(1)
  })
})

describe('the counter-test: the same activities without Interlock', { timeout: 180_000 }, () => {
  it('a refund applied before the crash is applied again by the retried attempt', async () => {
    const order = newOrder()
    const result = await crashThenRetry(bare, 'refund', order, { BARE_CRASH_AFTER: 'refund' })
    expect(result.ok, JSON.stringify(result)).toBe(true)
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(2)
  })

  it('a notice sent before the crash is sent again by the retried attempt', async () => {
    const order = newOrder()
    const before = notices.counts().plain['(none)'] ?? 0
    const result = await crashThenRetry(bare, 'notify', order, { BARE_CRASH_AFTER: 'notify' })
    expect(result.ok, JSON.stringify(result)).toBe(true)
    expect((notices.counts().plain['(none)'] ?? 0) - before).toBe(2)
  })
})
