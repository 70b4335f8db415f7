/**
 * `agent-interlock/restate` against the real Restate server from npm: the
 * example service (examples/restate/service.ts, run from the built package)
 * registered with it, SIGKILLed inside a step after its effect was applied
 * and before Restate journaled the step's result (Interlock's crash points,
 * src/core/crash-points.ts, armed through INTERLOCK_CRASH_AT), then started
 * again on the same port; Restate retries the invocation on it. Truth is the
 * services' own ledgers (the Stripe emulator, the ledger and notice
 * services), never Interlock's journal:
 *
 * - tier 1 (Stripe) and tier 2 (the ledger): applied once, the invocation
 *   completes;
 * - tier 3 (the notices): applied once, and the invocation fails with the
 *   AMBIGUOUS reason instead of sending it again;
 * - a HELD refund suspends the invocation (a durable sleep, no retry spent)
 *   until an operator releases it with `interlock outbox release`.
 *
 * The counter-test runs the same handler with bare `ctx.run` steps: the same
 * crash applies the refund, and the notice, twice.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { exampleProject, type ExampleProject } from '../helpers/example-project.js'
import { freePort } from '../helpers/free-port.js'
import { startHttpService, type HttpService } from '../helpers/http-service.js'
import { startRestate, until, type RestateServer } from '../helpers/restate-server.js'
import { startService, type ServiceProcess } from '../helpers/service-process.js'
import { StripeEmulator } from '../emulators/stripe.js'

const STRIPE_KEY = 'sk_test_restate_example_key_0001'
const alice = generateKeyPair('operator', 'alice')

let restate: RestateServer
let stripe: StripeEmulator
let ledger: HttpService
let notices: HttpService
let project: ExampleProject
const running: ServiceProcess[] = []

beforeAll(async () => {
  assertCliBuilt()
  ;[restate, stripe, ledger, notices] = await Promise.all([startRestate(), new StripeEmulator(STRIPE_KEY).start(), startHttpService(), startHttpService()])
  project = exampleProject('restate', ['@restatedev/restate-sdk'])
  // The example's own interlock.toml, with an operator trusted to release what its rule holds.
  const toml = readFileSync(join(project.dir, 'interlock.toml'), 'utf8')
  writeFileSync(join(project.dir, 'interlock.toml'), `${toml}\n[[operators]]\nname = "alice"\npublic_key = "${alice.publicKey}"\n`)
  writeKeyFile(join(project.dir, 'alice.key'), alice)
})

afterEach(async () => {
  for (const s of running.splice(0)) await s.kill()
})

afterAll(async () => {
  for (const s of running.splice(0)) await s.kill()
  await Promise.allSettled([restate?.stop(), stripe?.close(), ledger?.close(), notices?.close()])
  project?.cleanup()
})

const env = () => ({
  INTERLOCK_CONFIG: join(project.dir, 'interlock.toml'),
  STRIPE_API_KEY: STRIPE_KEY,
  STRIPE_URL: stripe.url,
  LEDGER_URL: ledger.url,
  NOTICES_URL: notices.url,
})

let orders = 0
/** A new order on a charge of its own, so each test's ledgers count only its effects. */
function newOrder(amount = '12.50', charged = 100_000) {
  const n = ++orders
  stripe.seedCharge({ id: `ch_3Restate${n}`, amount: charged, currency: 'usd' })
  return { order: `o-${n}`, charge: `ch_3Restate${n}`, amount, currency: 'usd' }
}

async function service(file: string, port: number, extra: Record<string, string> = {}): Promise<ServiceProcess> {
  const s = await startService(file, { cwd: project.dir, port, env: { ...env(), ...extra } })
  running.push(s)
  return s
}

/** Requests that carried an effect id to a service's /plain. */
const effectPosts = (svc: HttpService) => svc.requests().filter((r) => r.method === 'POST' && r.path === '/plain' && r.effectId !== undefined)

/** Runs one order through a service that dies at `crash`, then through the same service started again. */
async function crashAndRetry(file: string, crash: Record<string, string>, order: ReturnType<typeof newOrder>) {
  const port = await freePort()
  const first = await service(file, port, crash)
  await restate.register(`http://127.0.0.1:${port}`)
  const id = await restate.send('orders/refund', order, order.order)
  const ended = await Promise.race([first.exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000))])
  expect(ended, `the service did not die at ${JSON.stringify(crash)}:\n${first.output()}`).toEqual({ code: null, signal: 'SIGKILL' })
  // Restate retries the invocation meanwhile, and fails to reach the dead service: it backs off, its retries counted.
  await until(
    async () => {
      const [row] = await restate.query(`SELECT status, retry_count FROM sys_invocation WHERE id = '${id}'`)
      return row?.status === 'backing-off' && Number(row.retry_count) >= 2
    },
    20_000,
    () => 'Restate did not retry the invocation of the dead service',
  )
  await service(file, port)
  const answer = await restate.attach(id)
  return { id, answer }
}

describe('the Restate example, SIGKILLed inside a step and retried by Restate', { timeout: 120_000 }, () => {
  it('tier 1: a Stripe refund applied before the crash is found by the retry, not sent again', async () => {
    const order = newOrder()
    const { id, answer } = await crashAndRetry('service.ts', { INTERLOCK_CRASH_AT: 'after-apply@1' }, order)
    expect(answer.status, answer.body).toBe(200)
    const refunds = stripe.refunds.filter((r) => r.charge === order.charge)
    expect(refunds).toHaveLength(1)
    expect(JSON.parse(answer.body).refund).toBe(refunds[0]!.id)
    // The effect is on the invocation's thread, its key the step's name and ordinal.
    const show = await interlock(['outbox', 'show', refunds[0]!.metadata.interlock_effect_id!, '--json'], { cwd: project.dir, env: env() })
    expect(show.stdout).toContain(`"thread": "restate:${id}"`)
    expect(show.stdout).toContain('"key": "payments.refund#1"')
    // One POST ever reached Stripe for it: the retry looked the refund up by its effect id.
    const key = refunds[0]!.metadata.interlock_effect_id!
    expect(stripe.requests.filter((r) => r.method === 'POST' && r.idempotencyKey === key)).toHaveLength(1)
    expect(stripe.count(key)).toBe(1)
  })

  it('tier 1: killed after COMMITTED was journaled but before Restate journaled the step, the retry sends nothing', async () => {
    const order = newOrder()
    const { answer } = await crashAndRetry('service.ts', { INTERLOCK_CRASH_AT: 'after-committed@1' }, order)
    expect(answer.status, answer.body).toBe(200)
    const refunds = stripe.refunds.filter((r) => r.charge === order.charge)
    expect(refunds).toHaveLength(1)
    expect(stripe.requests.filter((r) => r.method === 'POST' && r.idempotencyKey === refunds[0]!.metadata.interlock_effect_id)).toHaveLength(1)
  })

  it('tier 2: a ledger line recorded before the crash is found by asking the ledger, not sent again', async () => {
    const order = newOrder()
    const before = effectPosts(ledger).length
    const { answer } = await crashAndRetry('service.ts', { INTERLOCK_CRASH_AT: 'after-apply@2' }, order)
    expect(answer.status, answer.body).toBe(200)
    const effects: string[] = JSON.parse(answer.body).effects
    const line = effects[1]!
    expect(ledger.counts().plain[line]).toBe(1)
    expect(effectPosts(ledger).length - before).toBe(1)
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(1)
  })

  it('tier 3: a notice sent before the crash is AMBIGUOUS; the invocation fails with that reason and nothing is sent again', async () => {
    const order = newOrder()
    const before = new Set(Object.keys(notices.counts().plain))
    const { id, answer } = await crashAndRetry('service.ts', { INTERLOCK_CRASH_AT: 'after-apply@3' }, order)
    const sent = Object.entries(notices.counts().plain).filter(([effect]) => !before.has(effect))
    expect(sent).toHaveLength(1)
    const [notice, times] = sent[0]!
    expect(times).toBe(1)
    expect(answer.status, answer.body).toBe(409)
    expect(answer.body).toContain(`AMBIGUOUS: this call (notify on notices, effect ${notice}) was sent`)
    expect(answer.body).toContain(`interlock outbox resolve ${notice} --applied`)
    // The refund and the ledger line before it went through once each.
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(1)
    const [row] = await restate.query(`SELECT status, completion_result, completion_failure FROM sys_invocation WHERE id = '${id}'`)
    expect(row).toMatchObject({ status: 'completed', completion_result: 'failure' })
    expect(String(row!.completion_failure)).toContain('AMBIGUOUS')
    // Interlock's journal says the same, for the operator.
    const list = await interlock(['outbox', 'show', notice, '--json'], { cwd: project.dir, env: env() })
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout).toContain('"AMBIGUOUS"')
  })
})

describe('an effect that cannot go', () => {
  it('a refund larger than what is left on the charge is REJECTED: the invocation fails at once with a TerminalError, nothing sent', async () => {
    const order = newOrder('12.50', 1_000)
    const port = await freePort()
    await service('service.ts', port)
    await restate.register(`http://127.0.0.1:${port}`)
    const id = await restate.send('orders/refund', order, order.order)
    const answer = await restate.attach(id)
    expect(answer.status, answer.body).toBe(412)
    expect(answer.body).toContain('Rejected, nothing was sent')
    expect(answer.body).toContain('no longer fits charge')
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toEqual([])
    const [row] = await restate.query(`SELECT status, completion_result FROM sys_invocation WHERE id = '${id}'`)
    expect(row).toMatchObject({ status: 'completed', completion_result: 'failure' })
  })
})

describe('the counter-test: the same handler with bare ctx.run steps', { timeout: 120_000 }, () => {
  const bare = join(import.meta.dirname, '../fixtures/restate/bare-service.ts')

  it('a refund applied before the crash is applied again by the retry', async () => {
    const order = newOrder()
    const { answer } = await crashAndRetry(bare, { BARE_CRASH_AFTER: 'refund' }, order)
    expect(answer.status, answer.body).toBe(200)
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(2)
  })

  it('a notice sent before the crash is sent again by the retry', async () => {
    const order = newOrder()
    const before = notices.counts().plain['(none)'] ?? 0
    const { answer } = await crashAndRetry(bare, { BARE_CRASH_AFTER: 'notify' }, order)
    expect(answer.status, answer.body).toBe(200)
    expect((notices.counts().plain['(none)'] ?? 0) - before).toBe(2)
  })
})

describe('a refund held for operators', { timeout: 120_000 }, () => {
  it('waits in durable sleeps, spending no retry, until `interlock outbox release`; then it is sent once', async () => {
    const order = newOrder('900.00')
    const port = await freePort()
    await service('service.ts', port)
    await restate.register(`http://127.0.0.1:${port}`)
    const id = await restate.send('orders/refund', order, order.order)
    // The journal shows the refund HELD, on the invocation's thread; nothing was sent.
    let held = ''
    await until(
      async () => {
        const list = await interlock(['outbox', 'list', '--thread', `restate:${id}`, '--state', 'HELD', '--json'], { cwd: project.dir, env: env() })
        held = (JSON.parse(list.stdout) as { effects: { effectId: string }[] }).effects[0]?.effectId ?? ''
        return held !== ''
      },
      20_000,
      () => 'the refund never became HELD',
    )
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(0)
    // Meanwhile the invocation runs its first attempt (or is suspended), its retry count never moves, and its
    // journal grows by durable sleeps and looks: no retry is spent waiting (compare the crash above: backing-off).
    const samples: Record<string, unknown>[] = []
    for (let i = 0; i < 5; i++) {
      samples.push(...(await restate.query(`SELECT status, retry_count FROM sys_invocation WHERE id = '${id}'`)))
      await new Promise((r) => setTimeout(r, 500))
    }
    for (const row of samples) expect(['running', 'suspended']).toContain(row.status)
    expect(samples.map((row) => Number(row.retry_count))).toEqual(samples.map(() => 1))
    // Sleeps and looks alternate; sampled between a sleep and the look after it, the looks are one behind, so
    // wait for the journal to show two of each rather than reading it once.
    let counts = { sleeps: 0, looks: 0 }
    await until(
      async () => {
        const journal = await restate.query(`SELECT entry_type, name FROM sys_journal WHERE id = '${id}' ORDER BY index`)
        const named = (type: string, name: string) => journal.filter((e) => e.entry_type === `Command: ${type}` && String(e.name).startsWith(name))
        counts = { sleeps: named('Sleep', 'interlock payments.refund: held').length, looks: named('Run', 'interlock payments.refund (look').length }
        return counts.sleeps >= 2 && counts.looks >= 2
      },
      30_000,
      () => `the held refund's journal never showed two durable sleeps and two looks: ${JSON.stringify(counts)}`,
    )
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(0)
    const [after] = await restate.query(`SELECT retry_count FROM sys_invocation WHERE id = '${id}'`)
    expect(Number(after?.retry_count)).toBe(1)
    const release = await interlock(['outbox', 'release', held, '--yes', '--key', join(project.dir, 'alice.key')], { cwd: project.dir, env: env() })
    expect(release.code, release.stderr).toBe(0)
    const answer = await restate.attach(id)
    expect(answer.status, answer.body).toBe(200)
    expect(stripe.refunds.filter((r) => r.charge === order.charge)).toHaveLength(1)
  })
})
