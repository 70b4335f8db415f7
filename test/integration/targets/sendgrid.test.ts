import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { parseConfig } from '../../../src/core/config/load.js'
import { toEffect } from '../../../src/core/effect.js'
import { DispatchFault, InputError } from '../../../src/core/errors.js'
import { createTarget } from '../../../src/core/targets/registry.js'
import type { EffectTarget } from '../../../src/core/targets/target.js'
import { SendgridMailTarget } from '../../../src/core/targets/sendgrid/index.js'
import type { FaultMode } from '../../emulators/emulator.js'
import { SendgridEmulator } from '../../emulators/sendgrid.js'
import { journalDispatched, journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'

const KEY = 'SG.interlock-emulator.ThisKeyMustNeverLeakIntoAnything'
const first = { attempt: 1, recovering: false }
let sendgrid: SendgridEmulator
let harness: SqliteGate | undefined
const targets: SendgridMailTarget[] = []

beforeEach(async () => {
  sendgrid = await new SendgridEmulator(KEY).start()
})
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
  for (const t of targets.splice(0)) await t.close()
  await sendgrid.close()
})

function target(over: { timeoutMs?: number; baseUrl?: string; apiKey?: string } = {}, now?: () => number): SendgridMailTarget {
  const t = new SendgridMailTarget('mail', { apiKey: KEY, baseUrl: sendgrid.url, timeoutMs: 2000, connectTimeoutMs: 1000, ...over }, now ? { now } : {})
  targets.push(t)
  return t
}

async function gate(opts: Parameters<typeof sqliteGate>[1] = {}, over: Parameters<typeof target>[0] = {}): Promise<SqliteGate> {
  harness = await sqliteGate(() => [target(over, opts.now)], opts)
  return harness
}

const mail = (args: JsonObject = {}): JsonObject => ({
  from: { email: 'billing@shop.example', name: 'Shop' },
  to: 'ada@example.org',
  subject: 'Your refund',
  text: 'We refunded 12.50 USD.',
  ...args,
})
const input = (args: JsonObject, premises?: JsonObject) => ({ thread: 'order-7', target: 'mail', action: 'send', args, premises })
const posts = () => sendgrid.requests.filter((r) => r.method === 'POST')

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  expect(JSON.stringify({ m: (e as Error).message, j: (e as DispatchFault).toJSON() })).not.toContain(KEY)
  return e as DispatchFault
}

describe('SendGrid send through the gate', () => {
  it('captures the recipients, sends once with the effect id in custom_args, keeps the message id, journals no secret', async () => {
    const { gate: g, store } = await gate()
    const args = mail({ cc: ['bob@example.org'], html: '<p>We refunded 12.50 USD.</p>', custom_args: { order: '7' } })
    const premises = await g.capture('mail', 'send', args)
    expect(premises).toEqual({ recipients: { 'ada@example.org': { suppressed: false }, 'bob@example.org': { suppressed: false } } })

    const out = await g.submit(input(args, premises))
    expect(out).toMatchObject({ status: 'committed', receipt: { status: 202, message_id: 'emu000001.filterdrecv', recipients: 2 } })
    expect(sendgrid.count(out.effectId)).toBe(1)
    expect(sendgrid.sentFor(out.effectId)[0]!.body).toEqual({
      personalizations: [{ to: [{ email: 'ada@example.org' }], cc: [{ email: 'bob@example.org' }] }],
      from: { email: 'billing@shop.example', name: 'Shop' },
      subject: 'Your refund',
      content: [
        { type: 'text/plain', value: 'We refunded 12.50 USD.' },
        { type: 'text/html', value: '<p>We refunded 12.50 USD.</p>' },
      ],
      custom_args: { order: '7', interlock_effect_id: out.effectId },
    })
    expect(await journalText(store)).not.toContain(KEY)
  })

  it('rejects a send to a recipient who unsubscribed since the decision, naming them, and sends nothing', async () => {
    const { gate: g } = await gate()
    const args = mail({ bcc: 'audit@shop.example' })
    const premises = await g.capture('mail', 'send', args)
    sendgrid.suppress('ada@example.org')

    const out = await g.submit(input(args, premises))
    expect(out).toMatchObject({ status: 'rejected', violations: ['ada@example.org unsubscribed from all mail (global suppression) since the decision'] })
    expect(sendgrid.count(out.effectId)).toBe(0)
    expect(posts()).toHaveLength(0)
  })

  it('refuses bad input with an error naming the argument, before anything is sent', async () => {
    const { gate: g } = await gate()
    const cases: [JsonObject, RegExp][] = [
      [mail({ to: 'not-an-address' }), /args\.to must be an email address \(got "not-an-address"\)/],
      [mail({ to: [] }), /args\.to must name at least one recipient/],
      [mail({ from: { email: 'a@b.example', nickname: 'x' } }), /args\.from takes email and name only/],
      [mail({ subject: '' }), /args\.subject must be a non-empty string/],
      [{ ...mail(), text: null }, /args\.text must be a non-empty string/],
      [Object.fromEntries(Object.entries(mail()).filter(([k]) => k !== 'text')), /args\.text or args\.html is required/],
      [mail({ cc: 'ada@example.org' }), /ada@example\.org appears more than once/],
      [mail({ custom_args: { n: 7 } }), /args\.custom_args must be an object of string values/],
      [mail({ custom_args: { interlock_effect_id: 'x' } }), /args\.custom_args\.interlock_effect_id is Interlock's own/],
      [mail({ attachments: [] }), /unknown mail argument: args\.attachments/],
    ]
    for (const [args, message] of cases) {
      await expect(g.submit(input(args)), JSON.stringify(args)).rejects.toThrow(InputError)
      await expect(g.submit(input(args))).rejects.toThrow(message)
      await expect(target().capture('send', args)).rejects.toThrow(message)
      const f = await fault(target().apply(toEffect(input(args)), first))
      expect(f.kind).toBe('refused')
    }
    expect(sendgrid.requests).toHaveLength(0)
  })

  it('429: not taken, retried after X-RateLimit-Reset, sent once', async () => {
    const { gate: g, slept } = await gate()
    sendgrid.rateLimit(1)
    const out = await g.submit(input(mail()))
    expect(out.status).toBe('committed')
    expect(sendgrid.count(out.effectId)).toBe(1)
    expect(posts()).toHaveLength(2)
    expect(slept).toHaveLength(1)
    expect(slept[0]).toBeGreaterThan(0)
    expect(slept[0]).toBeLessThanOrEqual(3000)
  })

  describe('403 "Too many bad requests. Temporary block"', () => {
    // One clock for SendGrid, the target and the gate; the gate's sleeps move it on.
    let clock = 0
    const clocked = (maxWaitMs?: number) => {
      clock = Date.parse('2031-05-01T12:00:00.000Z')
      sendgrid.now = () => clock
      return gate({ now: () => clock, onSleep: (ms) => (clock += ms), retry: maxWaitMs === undefined ? {} : { maxWaitMs } })
    }

    it('is not a refusal: the mail goes back to AUTHORIZED for a minute at a time, never FAILED or AMBIGUOUS, and is sent once the block lifts', async () => {
      const { gate: g, slept, store } = await clocked()
      sendgrid.temporaryBlock(90)
      const out = await g.submit(input(mail()))
      expect(out).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED', notBefore: new Date(clock + 60_000).toISOString() })
      expect(out.status === 'in_flight' && out.reason).toContain('Temporary block')
      expect(slept).toEqual([])
      clock += 60_000
      expect((await g.recover()).effects).toMatchObject([{ action: 'resumed', outcome: { status: 'in_flight', state: 'AUTHORIZED' } }])
      clock += 60_000
      expect((await g.recover()).effects).toMatchObject([{ action: 'resumed', outcome: { status: 'committed' } }])
      expect(sendgrid.count(out.effectId)).toBe(1)
      expect(posts()).toHaveLength(3)
      expect((await store.history(out.effectId)).map((r) => r.state)).toEqual([
        'PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED',
      ])
    })

    it('with max_wait_ms above the minute, it is waited for in place and sent in the same submit', async () => {
      const { gate: g, slept } = await clocked(120_000)
      sendgrid.temporaryBlock(45)
      const out = await g.submit(input(mail()))
      expect(out.status).toBe('committed')
      expect(slept).toEqual([60_000])
      expect(sendgrid.count(out.effectId)).toBe(1)
    })

    it('a 403 for a from address that is no verified Sender Identity stays a refusal (FAILED)', async () => {
      const { gate: g } = await clocked()
      sendgrid.verifiedSenders = new Set(['noreply@shop.example'])
      const out = await g.submit(input(mail()))
      expect(out).toMatchObject({ status: 'failed', reason: expect.stringContaining('(403): The from address does not match a verified Sender Identity') })
      expect(sendgrid.sent).toHaveLength(0)
    })
  })

  it('a wrong key is refused (FAILED) with SendGrid\'s message and without the key', async () => {
    const wrong = `${KEY}-revoked`
    const { gate: g, store } = await gate({}, { apiKey: wrong })
    const out = await g.submit(input(mail()))
    expect(out).toMatchObject({ status: 'failed', reason: expect.stringContaining('The provided authorization grant is invalid') })
    expect(await journalText(store)).not.toContain(wrong)
    expect(sendgrid.sent).toHaveLength(0)
  })
})

describe('SendGrid after a crash in flight (tier 3: AMBIGUOUS, never resent)', () => {
  const modes: FaultMode[] = ['reset-before-apply', 'apply-then-drop', 'reset-after-apply', '5xx', 'hang']
  const landed = (mode: FaultMode) => (mode === 'apply-then-drop' || mode === 'reset-after-apply' ? 1 : 0)

  for (const mode of modes) {
    it(`${mode}: the gate settles AMBIGUOUS at once; a crash mid-request recovers as AMBIGUOUS; at most one message`, async () => {
      const h = await gate({ retry: { maxAttempts: 5 } }, { timeoutMs: 300 })
      sendgrid.fault({ mode, route: 'POST /v3/mail/send' })
      const out = await h.gate.submit(input(mail()))
      expect(out).toMatchObject({ status: 'ambiguous', reason: expect.stringMatching(/^outcome unknown: /) })
      expect(sendgrid.count(out.effectId)).toBe(landed(mode))
      expect(posts()).toHaveLength(1)

      // The same fault while the process dies: DISPATCHED in the journal, the request on the wire.
      const e = toEffect(input(mail({ subject: 'Your refund, again' })))
      await journalDispatched(h.store, e, 3)
      sendgrid.fault({ mode, route: 'POST /v3/mail/send' })
      expect((await fault(target({ timeoutMs: 300 }).apply(e, first))).kind).toBe('unknown')

      const next = await h.restart()
      const report = await next.gate.recover()
      // The first effect is already AMBIGUOUS and waits for an operator; the crashed one becomes so now.
      expect(report.effects).toMatchObject([
        { effectId: out.effectId, found: 'AMBIGUOUS', action: 'waiting' },
        { effectId: e.id, found: 'DISPATCHED', action: 'marked-ambiguous', outcome: { status: 'ambiguous' } },
      ])
      expect(sendgrid.count(e.id)).toBe(landed(mode))
      expect(posts()).toHaveLength(2)
    })
  }

  it('a refused connection is not-sent: the gate may send again', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const f = await fault(target({ baseUrl: `http://127.0.0.1:${port}` }).apply(toEffect(input(mail())), first))
    expect(f.kind).toBe('not-sent')
  })
})

describe('SendGrid target', () => {
  it('cannot be compensated, and says why', () => {
    const t = target()
    expect((t as EffectTarget).compensation).toBeUndefined()
    expect(t.notCompensable).toMatch(/a sent email cannot be recalled/)
  })

  it('is configured by name with the key from the environment, and built by the registry', () => {
    const config = parseConfig(`[targets.mail]\ntype = "sendgrid"\napi_key = "\${SENDGRID_API_KEY}"\nbase_url = "${sendgrid.url}"\n`, {
      file: '/tmp/interlock.toml',
      env: { SENDGRID_API_KEY: KEY },
    })
    expect(config.targets.mail).toEqual({ type: 'sendgrid', apiKey: KEY, baseUrl: sendgrid.url, timeoutMs: 10000, connectTimeoutMs: 3000 })
    const t = createTarget('mail', config.targets.mail!, { secrets: config.secrets })
    targets.push(t as SendgridMailTarget)
    expect(t).toBeInstanceOf(SendgridMailTarget)
    expect(t.tier).toBe(3)
    expect(parseConfig('[targets.mail]\ntype = "sendgrid"\napi_key = "${K}"\n', { file: '/tmp/i.toml', env: { K: KEY } }).targets.mail).toMatchObject({
      baseUrl: 'https://api.sendgrid.com',
    })
  })
})
