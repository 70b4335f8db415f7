/**
 * agent-interlock/dbos inside a real DBOS app (this test process), its
 * system database and Interlock's journal (schema "interlock") in one
 * PostgreSQL database, against the Stripe and SendGrid emulators:
 *
 * - which effect a step is: thread from the workflow, key from the step, two
 *   steps never one effect; refused outside a workflow's step;
 * - each outcome's mapping: AMBIGUOUS, REJECTED, FAILED end the workflow with
 *   an error naming the effect, never retried; HELD and in-flight effects
 *   are waited on in the workflow (no step retry), durably, and a message on
 *   the effect's wake topic ends the wait at once;
 * - submitInStep in a step of the user's own, with DBOS retries on;
 * - outbox mode: the step proposes, a relay sends, the workflow gets its outcome.
 */
import { DBOS } from '@dbos-inc/dbos-sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { systemClock } from '../../../src/core/clock.js'
import { parseConfig } from '../../../src/core/config/load.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { openInterlock, type Interlock } from '../../../src/core/interlock.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { releaseEffect } from '../../../src/core/outbox/release.js'
import { openStore } from '../../../src/core/stores/open.js'
import type { Store } from '../../../src/core/stores/store.js'
import { StripeRefundTarget } from '../../../src/core/targets/stripe/index.js'
import {
  INTERLOCK_EVENT,
  interlockShouldRetry,
  interlockStep,
  isInterlockStepError,
  submitInStep,
  wakeTopic,
  workflowIdOf,
  type InterlockStepOptions,
  type StepEffect,
} from '../../../src/integrations/dbos/index.js'
import { SendgridEmulator } from '../../emulators/sendgrid.js'
import { StripeEmulator } from '../../emulators/stripe.js'
import { checkpointedSteps } from '../../helpers/dbos-world.js'
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js'

const alice = generateKeyPair('operator', 'alice')

let db: TestDatabase
let store: Store
let stripe: StripeEmulator
let sendgrid: SendgridEmulator
let interlock: Interlock
let seq = 0

const refund = (charge: string, amount = '12.50', premises?: JsonObject): StepEffect => ({
  target: 'payments',
  action: 'refund',
  args: { charge, amount, currency: 'usd' },
  ...(premises ? { premises } : {}),
})
const mail = (to: string): StepEffect => ({ target: 'mail', action: 'send', args: { from: 'shop@example.com', to, subject: 'Your refund', text: 'Done.' } })

// Workflows are registered before DBOS.launch(), as DBOS requires.
const oneStep = DBOS.registerWorkflow(async (effect: StepEffect, options: InterlockStepOptions) => interlockStep(interlock, 'pay', effect, options), { name: 'oneStep' })
const twoAlike = DBOS.registerWorkflow(
  async (effect: StepEffect) => [await interlockStep(interlock, 'pay', effect), await interlockStep(interlock, 'pay', effect)],
  { name: 'twoAlike' },
)
let ownStepAttempts = 0
const ownStep = DBOS.registerStep(
  async (effect: StepEffect) => {
    ownStepAttempts++
    return submitInStep(interlock, 'mine', effect)
  },
  { name: 'own-step', retriesAllowed: true, maxAttempts: 3, intervalSeconds: 0.01, shouldRetry: interlockShouldRetry },
)
const ownStepWorkflow = DBOS.registerWorkflow(async (effect: StepEffect) => ownStep(effect), { name: 'ownStepWorkflow' })
const stepInStep = DBOS.registerWorkflow(async (effect: StepEffect) => DBOS.runStep(() => interlockStep(interlock, 'pay', effect), { name: 'outer' }), { name: 'stepInStep' })
const throughOutbox = DBOS.registerWorkflow(async (effect: StepEffect) => interlockStep(interlock, 'pay', effect, { mode: 'outbox', pollMs: 100 }), { name: 'throughOutbox' })
const namedThread = DBOS.registerWorkflow(async (effect: StepEffect, thread?: string) => interlockStep(interlock, 'pay', effect, thread ? { thread } : {}), { name: 'namedThread' })

beforeAll(async () => {
  db = await createTestDatabase()
  store = await openStore({ kind: 'postgres', url: db.url, schema: 'interlock' }, { autoInstall: true })
  stripe = await new StripeEmulator().start()
  sendgrid = await new SendgridEmulator().start()
  // Everything from one interlock.toml, as an app has it: the journal in DBOS's database, two targets, a rule holding
  // refunds above 100.00 USD for one operator, two tries per dispatch.
  const toml = `[store]
kind = "postgres"
url = "${db.url}"
schema = "interlock"

[gate]
max_attempts = 2
backoff_ms = 1

[targets.payments]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"
timeout_ms = 2000

[targets.mail]
type = "sendgrid"
api_key = "\${SENDGRID_API_KEY}"
base_url = "${sendgrid.url}"
timeout_ms = 2000

[[operators]]
name = "alice"
public_key = "${alice.publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "payments"
when = [{ arg = "amount", above = "100.00", currency = "USD" }]
quorum = 1
`
  interlock = await openInterlock({ config: parseConfig(toml, { file: '/tmp/interlock.toml', env: { STRIPE_API_KEY: stripe.apiKey, SENDGRID_API_KEY: sendgrid.apiKey } }) })
  // DBOS logs every workflow that ends in error; these tests end many so on purpose, and check each.
  const quiet = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} }
  DBOS.setConfig({ name: 'interlock-dbos-steps', systemDatabaseUrl: db.url, logger: quiet })
  await DBOS.launch()
})

afterAll(async () => {
  await DBOS.shutdown()
  await interlock?.close()
  await store?.close()
  await stripe?.close()
  await sendgrid?.close()
  await db?.drop()
})

function charge(amount = 100_000): string {
  const id = `ch_steps${++seq}`
  stripe.seedCharge({ id, amount, currency: 'usd' })
  return id
}

const wfId = (name: string) => `${name}-${++seq}-${Date.now()}`
const refundsOn = (ch: string) => stripe.refunds.filter((r) => r.charge === ch).length

/** The error the workflow ended with. */
async function failure(p: Promise<unknown>): Promise<Error & { code?: string; effectId?: string; hint?: string; status?: string }> {
  try {
    await p
  } catch (e) {
    return e as Error
  }
  throw new Error('the workflow ended well, an error was expected')
}

async function until<T>(what: string, probe: () => Promise<T | null | undefined>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('which effect a DBOS step is', () => {
  it('thread dbos:<workflow ID>, key <step name>#<step ID>: the journal names the workflow and the step', async () => {
    const id = wfId('order')
    const ch = charge()
    const o = await (await DBOS.startWorkflow(oneStep, { workflowID: id })(refund(ch), {})).getResult()
    expect(o).toMatchObject({ status: 'committed', via: 'apply' })
    const snap = await store.get(o.effectId)
    expect(snap?.effect).toMatchObject({ thread: `dbos:${id}`, key: 'pay#0' })
    expect(workflowIdOf(snap!.effect.thread)).toBe(id)
    expect(refundsOn(ch)).toBe(1)
  })

  it('two steps of one workflow with the same name and arguments are two effects: both refunds are made', async () => {
    const ch = charge()
    const [a, b] = await (await DBOS.startWorkflow(twoAlike, { workflowID: wfId('twice') })(refund(ch))).getResult()
    expect(a!.effectId).not.toBe(b!.effectId)
    expect([(await store.get(a!.effectId))?.effect.key, (await store.get(b!.effectId))?.effect.key]).toEqual(['pay#0', 'pay#1'])
    expect(refundsOn(ch)).toBe(2)
  })

  it('the same workflow ID started again is the same workflow: DBOS answers from its checkpoints, nothing is sent', async () => {
    const id = wfId('again')
    const ch = charge()
    const first = await (await DBOS.startWorkflow(oneStep, { workflowID: id })(refund(ch), {})).getResult()
    const second = await (await DBOS.startWorkflow(oneStep, { workflowID: id })(refund(ch), {})).getResult()
    expect(second.effectId).toBe(first.effectId)
    expect(refundsOn(ch)).toBe(1)
  })

  it('refuses a workflow ID that cannot name a thread, and takes a thread named instead', async () => {
    const ch = charge()
    const refused = await failure((await DBOS.startWorkflow(namedThread, { workflowID: `order 42 ${++seq}` })(refund(ch))).getResult())
    expect(refused.message).toMatch(/DBOS workflow ID "order 42 \d+" cannot name an Interlock thread/)
    expect(refundsOn(ch)).toBe(0)

    const o = await (await DBOS.startWorkflow(namedThread, { workflowID: `order 43 ${++seq}` })(refund(ch), `shop/order-43-${seq}`)).getResult()
    expect((await store.get(o.effectId))?.effect.thread).toBe(`shop/order-43-${seq}`)
    expect(refundsOn(ch)).toBe(1)
  })

  it('two workflows that name the same thread are still two effects: each refund is made', async () => {
    const ch = charge()
    const thread = `shop/customer-${++seq}`
    const a = await (await DBOS.startWorkflow(namedThread, { workflowID: wfId('customer-a') })(refund(ch), thread)).getResult()
    const b = await (await DBOS.startWorkflow(namedThread, { workflowID: wfId('customer-b') })(refund(ch), thread)).getResult()
    expect(b.effectId).not.toBe(a.effectId)
    expect(b).toMatchObject({ status: 'committed', via: 'apply' })
    expect(refundsOn(ch)).toBe(2)
  })

  it('refuses to run outside a workflow step: submitInStep called bare, interlockStep called inside a step', async () => {
    const ch = charge()
    await expect(submitInStep(interlock, 'pay', refund(ch))).rejects.toThrow(/ran outside a DBOS step of a workflow/)
    const e = await failure((await DBOS.startWorkflow(stepInStep, { workflowID: wfId('nested') })(refund(ch))).getResult())
    expect(e.message).toMatch(/interlockStep\("pay"\) is called from a DBOS workflow function, outside its steps/)
    expect(refundsOn(ch)).toBe(0)
  })
})

describe('outcomes that end the workflow, never retried', () => {
  it('AMBIGUOUS (a tier-3 send whose answer was lost): the workflow ends with an error naming the effect and the resolve command; sent once', async () => {
    const to = `lost${++seq}@example.com`
    sendgrid.fault({ mode: 'apply-then-drop', route: 'POST /v3/mail/send' })
    const id = wfId('mail')
    const e = await failure((await DBOS.startWorkflow(oneStep, { workflowID: id })(mail(to), {})).getResult())
    expect(isInterlockStepError(e)).toBe(true)
    expect(e).toMatchObject({ code: 'E_EFFECT_AMBIGUOUS', status: 'ambiguous' })
    expect(e.message).toContain(`AMBIGUOUS: this call (send on mail, effect ${e.effectId}) was sent, and nobody can know whether it took effect`)
    expect(e.message).toContain(`(step "pay" of DBOS workflow ${id})`)
    expect(e.hint).toContain(`interlock outbox resolve ${e.effectId} --applied`)
    expect(sendgrid.count(e.effectId!)).toBe(1)
    expect(await DBOS.getWorkflowStatus(id)).toMatchObject({ status: 'ERROR' })
    // The step ended well (its outcome checkpointed); the workflow threw after it.
    expect(await checkpointedSteps(db.url, id)).toEqual([{ name: 'pay', error: false }])
  })

  it('REJECTED (the charge was disputed since the premises were read): nothing sent, the error names what changed', async () => {
    const ch = charge()
    const premises = await interlock.gate.capture('payments', 'refund', refund(ch).args)
    stripe.updateCharge(ch, { disputed: true })
    const e = await failure((await DBOS.startWorkflow(oneStep, { workflowID: wfId('stale') })(refund(ch, '12.50', premises), {})).getResult())
    expect(e).toMatchObject({ code: 'E_EFFECT_REJECTED', status: 'rejected' })
    expect(e.message).toMatch(/Rejected, nothing was sent: .*\n- .*disputed/)
    expect(refundsOn(ch)).toBe(0)
  })

  it('FAILED (SendGrid refuses a sender that is no verified identity): the error names the effect and what the target said', async () => {
    const to = `refused${++seq}@example.com`
    sendgrid.verifiedSenders = new Set(['someone-else@example.com'])
    try {
      const e = await failure((await DBOS.startWorkflow(oneStep, { workflowID: wfId('refused') })(mail(to), {})).getResult())
      expect(e).toMatchObject({ code: 'E_EFFECT_FAILED', status: 'failed' })
      expect(e.message).toContain(`Failed, nothing was done: mail refused this call (effect ${e.effectId})`)
      expect(e.message).toContain('verified Sender Identity')
      expect(e.hint).toContain(`interlock outbox show ${e.effectId}`)
      expect(sendgrid.sentFor(e.effectId!)).toEqual([])
    } finally {
      sendgrid.verifiedSenders = null
    }
  })

  it("in a step of the user's own with DBOS retries on: AMBIGUOUS is thrown from the step and not retried (interlockShouldRetry)", async () => {
    const to = `own${++seq}@example.com`
    sendgrid.fault({ mode: 'reset-after-apply', route: 'POST /v3/mail/send' })
    ownStepAttempts = 0
    const e = await failure((await DBOS.startWorkflow(ownStepWorkflow, { workflowID: wfId('own') })(mail(to))).getResult())
    expect(e).toMatchObject({ code: 'E_EFFECT_AMBIGUOUS' })
    expect(ownStepAttempts).toBe(1)
    expect(sendgrid.count(e.effectId!)).toBe(1)
  })

  it("in a step of the user's own: COMMITTED is returned, the key taken from that step", async () => {
    const to = `fine${++seq}@example.com`
    const o = await (await DBOS.startWorkflow(ownStepWorkflow, { workflowID: wfId('own-ok') })(mail(to))).getResult()
    expect(o).toMatchObject({ status: 'committed' })
    expect((await store.get(o.effectId))?.effect.key).toBe('mine#0')
  })
})

describe('effects that wait: in the workflow, durably, without a step retry', () => {
  it("HELD: the workflow waits (its event says for what), an operator's release and a message on the wake topic carry it on; refunded once", async () => {
    const ch = charge()
    const id = wfId('held')
    const handle = await DBOS.startWorkflow(oneStep, { workflowID: id })(refund(ch, '500.00'), { pollMs: 120_000 })
    const waiting = await until('the held event', () => DBOS.getEvent<Record<string, string>>(id, INTERLOCK_EVENT, { timeoutSeconds: 0.1 }))
    expect(waiting).toMatchObject({ step: 'pay', status: 'held', rule: 'large-refunds' })
    expect(await DBOS.getWorkflowStatus(id)).toMatchObject({ status: 'PENDING' })
    expect(refundsOn(ch)).toBe(0)

    await releaseEffect({ store: interlock.store, operators: interlock.operators, policy: interlock.policy, key: alice, clock: systemClock }, waiting.effectId!)
    // No watcher sends this yet: whoever releases may (DBOSClient.send from another process works alike).
    await DBOS.send(id, 'released', wakeTopic(waiting.effectId!))
    const o = await handle.getResult()
    expect(o).toMatchObject({ status: 'committed', effectId: waiting.effectId })
    expect(refundsOn(ch)).toBe(1)
    expect(await DBOS.getEvent(id, INTERLOCK_EVENT)).toMatchObject({ status: 'committed' })
    // One submit step, checkpointed once, then the looks: no step failed or was retried.
    const steps = await checkpointedSteps(db.url, id)
    expect(steps.filter((s) => s.name === 'pay')).toEqual([{ name: 'pay', error: false }])
    expect(steps.filter((s) => s.name === 'pay:look')).toEqual([{ name: 'pay:look', error: false }])
  })

  it("HELD with held: 'fail': the workflow ends at once, the error naming the release command; nothing sent", async () => {
    const ch = charge()
    const e = await failure((await DBOS.startWorkflow(oneStep, { workflowID: wfId('held-fail') })(refund(ch, '500.00'), { held: 'fail' })).getResult())
    expect(e).toMatchObject({ code: 'E_EFFECT_HELD', status: 'held' })
    expect(e.message).toContain('waits for a release under rule "large-refunds"')
    expect(e.hint).toContain(`interlock outbox release ${e.effectId}`)
    expect(refundsOn(ch)).toBe(0)
  })

  it('HELD past waitTimeoutMs: the workflow stops waiting with an error saying the effect stays journaled', async () => {
    const ch = charge()
    const e = await failure((await DBOS.startWorkflow(oneStep, { workflowID: wfId('held-late') })(refund(ch, '500.00'), { pollMs: 100, waitTimeoutMs: 400 })).getResult())
    expect(e).toMatchObject({ code: 'E_EFFECT_WAIT_TIMEOUT', status: 'wait-timeout' })
    expect(e.message).toMatch(/^Stopped waiting after \d+ ms\. Held for operators/)
    expect((await store.get(e.effectId!))?.state).toBe('HELD')
    expect(refundsOn(ch)).toBe(0)
  })

  it('in flight (Stripe answering 503 until the gate gave up): the workflow waits and looks again, the look sends it; refunded once', async () => {
    const ch = charge()
    stripe.fault({ mode: '5xx', status: 503, route: 'POST /v1/refunds', times: 2 })
    const id = wfId('busy')
    const o = await (await DBOS.startWorkflow(oneStep, { workflowID: id })(refund(ch), { pollMs: 100 })).getResult()
    expect(o).toMatchObject({ status: 'committed' })
    expect(refundsOn(ch)).toBe(1)
    expect(stripe.requests.filter((q) => q.method === 'POST' && q.idempotencyKey === o.effectId)).toHaveLength(3)
    const steps = (await checkpointedSteps(db.url, id)).filter((s) => s.name.startsWith('pay'))
    expect(steps).toEqual([
      { name: 'pay', error: false },
      { name: 'pay:look', error: false },
    ])
  })
})

describe('outbox mode: the step proposes, a relay sends', () => {
  it("the workflow ends with the relay's outcome, the thread and key its own; refunded once", async () => {
    const relay = new Relay({
      store: interlock.store,
      targets: [new StripeRefundTarget('payments', { apiKey: stripe.apiKey, baseUrl: stripe.url, timeoutMs: 2000, connectTimeoutMs: 1000 })],
      relayId: 'dbos-test-relay',
      key: generateKeyPair('relay', 'dbos-test-relay'),
      policy: interlock.policy,
      operators: interlock.operators,
      pollMs: 20,
    })
    await relay.start()
    try {
      const ch = charge()
      const id = wfId('outbox')
      const o = await (await DBOS.startWorkflow(throughOutbox, { workflowID: id })(refund(ch))).getResult()
      expect(o).toMatchObject({ status: 'committed' })
      expect((await store.get(o.effectId))?.effect).toMatchObject({ thread: `dbos:${id}`, key: 'pay#0' })
      expect(refundsOn(ch)).toBe(1)
    } finally {
      await relay.stop()
    }
  })
})
