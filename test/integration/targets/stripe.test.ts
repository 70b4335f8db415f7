import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { parseConfig } from '../../../src/core/config/load.js'
import { toEffect, type Effect } from '../../../src/core/effect.js'
import { DispatchFault, InputError } from '../../../src/core/errors.js'
import { systemClock } from '../../../src/core/clock.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import type { OperatorContext } from '../../../src/core/outbox/operator-context.js'
import { redispatch } from '../../../src/core/outbox/redispatch.js'
import { resolveEffect } from '../../../src/core/outbox/resolve.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { createTarget } from '../../../src/core/targets/registry.js'
import type { EffectTarget } from '../../../src/core/targets/target.js'
import { StripeRefundTarget } from '../../../src/core/targets/stripe/index.js'
import type { FaultMode } from '../../emulators/emulator.js'
import { StripeEmulator } from '../../emulators/stripe.js'
import { journalDispatched, journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'

const KEY = 'sk_test_51InterlockEmulatorKeyThatMustNeverLeak'
const first = { attempt: 1, recovering: false }
let stripe: StripeEmulator
let harness: SqliteGate | undefined
const targets: StripeRefundTarget[] = []

beforeEach(async () => {
  stripe = await new StripeEmulator(KEY).start()
  stripe.seedCharge({ id: 'ch_usd', amount: 5000, currency: 'usd' })
  stripe.seedCharge({ id: 'ch_jpy', amount: 10_000, currency: 'jpy' })
  stripe.seedCharge({ id: 'ch_kwd', amount: 20_000, currency: 'kwd' })
})
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
  for (const t of targets.splice(0)) await t.close()
  await stripe.close()
})

function target(over: { timeoutMs?: number; baseUrl?: string; apiKey?: string } = {}, options: { now?: () => number } = {}): StripeRefundTarget {
  const t = new StripeRefundTarget('payments', { apiKey: KEY, baseUrl: stripe.url, timeoutMs: 2000, connectTimeoutMs: 1000, ...over }, options)
  targets.push(t)
  return t
}

async function gate(opts: Parameters<typeof sqliteGate>[1] = {}, over: Parameters<typeof target>[0] = {}, options: Parameters<typeof target>[1] = {}): Promise<SqliteGate> {
  harness = await sqliteGate(() => [target(over, options)], opts)
  return harness
}

const HOUR = 3_600_000

const refund = (args: JsonObject = {}) => ({ charge: 'ch_usd', amount: '12.50', currency: 'usd', ...args })
const input = (args: JsonObject, premises?: JsonObject) => ({ thread: 'order-7', target: 'payments', action: 'refund', args, premises })
const posts = () => stripe.requests.filter((r) => r.method === 'POST')

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  expect(JSON.stringify({ m: (e as Error).message, j: (e as DispatchFault).toJSON() })).not.toContain(KEY)
  return e as DispatchFault
}

describe('Stripe refund through the gate', () => {
  it('captures the charge, refunds once with the effect id as Idempotency-Key, and journals no secret', async () => {
    const { gate: g, store } = await gate()
    const args = refund()
    const premises = await g.capture('payments', 'refund', args)
    expect(premises).toEqual({ charge: { id: 'ch_usd', status: 'succeeded', amount: 5000, amount_refunded: 0, disputed: false, currency: 'usd' } })

    const out = await g.submit(input(args, premises))
    expect(out).toMatchObject({ status: 'committed', receipt: { status: 'succeeded', charge: 'ch_usd', amount: 1250, amount_decimal: '12.50', currency: 'usd' } })
    expect(stripe.count(out.effectId)).toBe(1)
    expect(stripe.refundsFor(out.effectId)).toMatchObject([{ amount: 1250, charge: 'ch_usd', metadata: { interlock_effect_id: out.effectId } }])
    expect(stripe.charges.get('ch_usd')!.amount_refunded).toBe(1250)
    expect((await store.history(out.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    expect(await journalText(store)).not.toContain(KEY)
  })

  it('turns decimal amounts into minor units: zero-decimal JPY, three-decimal KWD', async () => {
    const { gate: g } = await gate()
    const yen = await g.submit(input({ charge: 'ch_jpy', amount: '500', currency: 'JPY' }))
    const dinar = await g.submit(input({ charge: 'ch_kwd', amount: '5.12', currency: 'kwd' }))
    expect(yen).toMatchObject({ status: 'committed', receipt: { amount: 500, amount_decimal: '500', currency: 'jpy' } })
    expect(dinar).toMatchObject({ status: 'committed', receipt: { amount: 5120, amount_decimal: '5.120' } })
    expect(stripe.refunds.map((r) => r.amount)).toEqual([500, 5120])
  })

  it('rejects a refund whose charge changed since the decision, naming each field, and sends nothing', async () => {
    const { gate: g } = await gate()
    const args = refund({ amount: '40.00' })
    const premises = await g.capture('payments', 'refund', args)
    stripe.updateCharge('ch_usd', { amount_refunded: 2000 })
    stripe.updateCharge('ch_usd', { disputed: true })

    const out = await g.submit(input(args, premises))
    expect(out.status).toBe('rejected')
    if (out.status !== 'rejected') return
    expect(out.violations).toEqual([
      'charge ch_usd: amount_refunded changed since the decision (was 0, now 2000)',
      'charge ch_usd: disputed changed since the decision (was false, now true)',
      'a refund of 40.00 USD no longer fits charge ch_usd: 30.00 USD is left to refund (50.00 USD charged, 20.00 USD refunded)',
    ])
    expect(stripe.count(out.effectId)).toBe(0)
    expect(posts()).toHaveLength(0)
  })

  it('refuses bad input with an error naming the argument, before anything is sent', async () => {
    const { gate: g } = await gate()
    const cases: [JsonObject, RegExp][] = [
      [refund({ amount: '12.345' }), /args\.amount 12\.345 USD is finer than the currency allows: USD has 2 decimal places; it is refused, not rounded/],
      [refund({ amount: '-5.00' }), /args\.amount must be more than zero/],
      [refund({ amount: '0.00' }), /args\.amount must be more than zero/],
      [refund({ amount: '12,50' }), /args\.amount must be a decimal string/],
      [refund({ amount: 12.5 }), /args\.amount must be a decimal string such as "12\.50" \(got 12\.5\)/],
      [refund({ charge: 'ch_jpy', currency: 'jpy', amount: '1.5' }), /JPY takes whole units only/],
      [refund({ charge: 'ch_kwd', currency: 'kwd', amount: '5.124' }), /Stripe takes KWD to 2 decimal places \(the last of its 3 digits must be 0\)/],
      [refund({ charge: '../v1/customers' }), /args\.charge must be a Stripe charge id/],
      [refund({ currency: 'dollars' }), /args\.currency must be a three-letter ISO currency code/],
      [refund({ reason: 'changed_mind' }), /args\.reason must be one of duplicate, fraudulent, requested_by_customer/],
      [refund({ note: 'x' }), /unknown refund argument: args\.note/],
    ]
    for (const [args, message] of cases) {
      // The gate refuses at submit when it asks the target (validateArgs); otherwise the premise check does, before DISPATCHED.
      let said: string
      try {
        said = JSON.stringify(await g.submit(input(args)))
      } catch (e) {
        expect(e).toBeInstanceOf(InputError)
        said = (e as Error).message
      }
      expect(said, JSON.stringify(args)).toMatch(message)
      await expect(target().capture('refund', args)).rejects.toThrow(message)
      const f = await fault(target().apply(toEffect(input(args)), first))
      expect(f.kind).toBe('refused')
      expect(f.message).toMatch(message)
    }
    expect(stripe.requests).toHaveLength(0)
    expect(stripe.applications.size).toBe(0)
  })

  it('capture refuses a charge that does not exist or is in another currency', async () => {
    await expect(target().capture('refund', refund({ charge: 'ch_missing' }))).rejects.toThrow(/args\.charge: Stripe has no charge ch_missing/)
    await expect(target().capture('refund', refund({ charge: 'ch_jpy', amount: '5' }))).rejects.toThrow(
      /args\.currency is USD, but charge ch_jpy is in JPY/,
    )
    expect(posts()).toHaveLength(0)
  })
})

describe('Stripe refund after a crash in flight (tier 1: the same key again, exactly one refund)', () => {
  // A 503 stands for a failure in front of Stripe's API, which saves nothing for the key; a 500 is saved (below).
  const modes: [FaultMode, number?][] = [['reset-before-apply'], ['apply-then-drop'], ['reset-after-apply'], ['5xx', 503], ['hang']]

  for (const [mode, status] of modes) {
    it(`${mode}${status ? ` ${status}` : ''}: the only try ends unknown, the effect stays DISPATCHED, recovery refunds exactly once`, async () => {
      const before = await gate({ retry: { maxAttempts: 1 } }, { timeoutMs: 300 })
      stripe.fault({ mode, route: 'POST /v1/refunds', status })
      const args = refund()
      const out = await before.gate.submit(input(args, await before.gate.capture('payments', 'refund', args)))
      expect(out).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })
      expect(stripe.count(out.effectId)).toBe(mode === 'apply-then-drop' || mode === 'reset-after-apply' ? 1 : 0)

      const next = await before.restart()
      const report = await next.gate.recover()
      expect(report.effects).toMatchObject([{ effectId: out.effectId, found: 'DISPATCHED', action: 're-applied', outcome: { status: 'committed' } }])
      expect(stripe.count(out.effectId)).toBe(1)
      expect(stripe.refundsFor(out.effectId)).toHaveLength(1)
      expect(stripe.charges.get('ch_usd')!.amount_refunded).toBe(1250)
      // Recovery looks for the refund first: found, nothing is sent again; not found, sent with the same key.
      const landed = mode === 'apply-then-drop' || mode === 'reset-after-apply'
      expect(posts()).toHaveLength(landed ? 1 : 2)
      const outcome = report.effects[0]!.outcome as { receipt: JsonObject }
      expect(outcome.receipt.found ?? false).toBe(landed)
    })
  }

  it('a process that died mid-request and recovers after Stripe pruned the key: found by its metadata, refunded once', async () => {
    const h = await gate()
    const e = toEffect(input(refund()))
    await journalDispatched(h.store, e, 1)
    stripe.fault({ mode: 'apply-then-drop' })
    expect((await fault(target().apply(e, first))).kind).toBe('unknown')
    stripe.pruneKeys()

    const next = await h.restart()
    await next.gate.recover()
    expect(await next.store.get(e.id)).toMatchObject({ state: 'COMMITTED', detail: { receipt: { found: true } } })
    expect(stripe.count(e.id)).toBe(1)
    expect(posts()).toHaveLength(1)

    // Why recovery looks first: with the key pruned, sending again would be a second refund.
    expect(await target().apply(e, { attempt: 1, recovering: true })).toMatchObject({ found: true })
    expect(stripe.count(e.id)).toBe(1)
    expect(posts()).toHaveLength(1)
  })

  it('recovery finds its refund beyond the first page of the charge\'s refunds', async () => {
    const e = toEffect(input(refund({ amount: '0.50' })))
    stripe.fault({ mode: 'reset-after-apply' })
    await fault(target().apply(e, first))
    for (let i = 0; i < 150; i++) {
      stripe.refunds.push({ id: `re_other${i}`, object: 'refund', amount: 1, charge: 'ch_usd', currency: 'usd', status: 'succeeded', reason: null, metadata: {} })
    }
    stripe.pruneKeys()
    expect(await target().apply(e, { attempt: 1, recovering: true })).toMatchObject({ found: true, amount: 50 })
    expect(stripe.count(e.id)).toBe(1)
    expect(stripe.requests.filter((r) => r.method === 'GET' && r.path === '/v1/refunds')).toHaveLength(2)
  })

  it('the first request still running: 409 idempotency_key_in_use, retried later with the same key, one refund', async () => {
    const { gate: g } = await gate({ retry: { maxAttempts: 5, backoffMs: 250 }, realSleep: true }, { timeoutMs: 300 })
    stripe.delayNext(900)
    const out = await g.submit(input(refund()))
    expect(out).toMatchObject({ status: 'committed', receipt: { replayed: true } })
    expect(stripe.count(out.effectId)).toBe(1)
    // Timed out, then 409 while the first ran, then the saved answer.
    expect(posts().length).toBeGreaterThanOrEqual(3)
  })
})

describe('A re-apply more than a day after the dispatch: the key may be pruned, so it never re-POSTs blind', () => {
  it('the emulator forgets a key 24 hours after it saved it, by its clock: the same key is then a new refund', async () => {
    const e = toEffect(input(refund({ amount: '1.00' })))
    await target().apply(e, first)
    await target().apply(e, { attempt: 2, recovering: false, dispatchedAt: Date.now() })
    expect(stripe.count(e.id)).toBe(1)
    stripe.clock = () => Date.now() + 24 * HOUR
    // Sent as a target before this change did, straight after its own lookup missed: a second refund.
    await fetch(`${stripe.url}/v1/refunds`, {
      method: 'POST',
      body: new URLSearchParams({ charge: 'ch_usd', amount: '100', 'metadata[interlock_effect_id]': e.id }).toString(),
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': e.id },
    })
    expect(stripe.count(e.id)).toBe(2)
  })

  it('found by the lookup: COMMITTED from it; not found: not-applied, and nothing is sent', async () => {
    const late = target({}, { now: () => Date.now() + 25 * HOUR })
    const e = toEffect(input(refund()))
    const f = await fault(late.apply(e, { attempt: 1, recovering: true, dispatchedAt: Date.now() }))
    expect(f.kind).toBe('not-applied')
    expect(f.message).toMatch(/the idempotency key is 25\.0 hours old, and Stripe may prune a key once it is 24 hours old/)
    expect(posts()).toHaveLength(0)

    await target().apply(e, first)
    expect(await late.apply(e, { attempt: 2, recovering: false, dispatchedAt: Date.now() })).toMatchObject({ found: true })
    expect(posts()).toHaveLength(1)
  })

  it('within the day the same key is sent again, as before; a lookup that cannot be made past it sends nothing', async () => {
    const e = toEffect(input(refund()))
    const hourLater = target({}, { now: () => Date.now() + HOUR })
    expect(await hourLater.apply(e, { attempt: 2, recovering: false, dispatchedAt: Date.now() })).toMatchObject({ status: 'succeeded' })
    expect(posts()).toHaveLength(1)

    const down = target({ baseUrl: 'http://127.0.0.1:9' }, { now: () => Date.now() + 25 * HOUR })
    expect(await fault(down.apply(toEffect(input(refund({ amount: '1.00' }))), { attempt: 1, recovering: true, dispatchedAt: Date.now() }))).toMatchObject({ kind: 'not-sent' })
  })

  /** A refund whose premises were captured and whose first send never reached Stripe, journaled DISPATCHED; then a day passes, for the gate and for Stripe. */
  async function dispatchedADayAgo() {
    const later = () => Date.now() + 25 * HOUR
    const h = await gate({}, {}, { now: later })
    const args = refund()
    const e = toEffect(input(args, await h.gate.capture('payments', 'refund', args)))
    await journalDispatched(h.store, e, 1)
    stripe.clock = later
    return { h, e }
  }

  it('recovery a day later: back to AUTHORIZED, the changed charge rejects it; no refund', async () => {
    const { h, e } = await dispatchedADayAgo()
    // Meanwhile someone refunds part of the charge by hand.
    stripe.updateCharge('ch_usd', { amount_refunded: 4000 })
    const report = await (await h.restart()).gate.recover()
    expect(report.effects).toMatchObject([{ effectId: e.id, found: 'DISPATCHED', outcome: { status: 'rejected' } }])
    expect((report.effects[0]!.outcome as { violations: string[] }).violations).toContain('charge ch_usd: amount_refunded changed since the decision (was 0, now 4000)')
    expect((await h.store.history(e.id)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'REJECTED'])
    expect(stripe.count(e.id)).toBe(0)
    expect(posts()).toHaveLength(0)
  })

  it('recovery a day later, the charge unchanged: premises checked again, then one new POST, one refund', async () => {
    const { h, e } = await dispatchedADayAgo()
    const report = await (await h.restart()).gate.recover()
    expect(report.effects).toMatchObject([{ effectId: e.id, outcome: { status: 'committed' } }])
    expect((await h.store.history(e.id)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    expect(stripe.count(e.id)).toBe(1)
    expect(posts()).toHaveLength(1)
    expect(stripe.requests.filter((r) => r.method === 'GET' && r.path === '/v1/charges/ch_usd')).toHaveLength(2)
  })
})

describe('A 500 Stripe saved for the key: replayed on every retry, settled by the refund lookup', () => {
  it('the emulator saves a 500 and replays it, marked Idempotent-Replayed and Stripe-Should-Retry: false', async () => {
    stripe.fault({ mode: '5xx', route: 'POST /v1/refunds' })
    const body = new URLSearchParams({ charge: 'ch_usd', amount: '1250' }).toString()
    const send = () =>
      fetch(`${stripe.url}/v1/refunds`, { method: 'POST', body, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/x-www-form-urlencoded', 'idempotency-key': 'k-500' } })
    const firstAnswer = await send()
    expect(firstAnswer.status).toBe(500)
    expect(firstAnswer.headers.get('stripe-should-retry')).toBe('false')
    expect(await firstAnswer.json()).toMatchObject({ error: { type: 'api_error' } })
    for (let i = 0; i < 2; i++) {
      const again = await send()
      expect([again.status, again.headers.get('idempotent-replayed'), again.headers.get('stripe-should-retry')]).toEqual([500, 'true', 'false'])
    }
    expect(stripe.refunds).toHaveLength(0)
  })

  it('no refund made: one POST, no blind re-send, AMBIGUOUS with what to look at (the effect is not left in flight)', async () => {
    const { gate: g, store } = await gate()
    stripe.fault({ mode: '5xx', route: 'POST /v1/refunds' })
    const out = await g.submit(input(refund()))
    expect(out).toMatchObject({ status: 'ambiguous', reason: expect.stringContaining('Stripe keeps that answer for the idempotency key: every retry with it gets the same 500') })
    expect((out as { reason: string }).reason).toContain('look at charge ch_usd in the Stripe Dashboard')
    expect(posts()).toHaveLength(1)
    expect(stripe.requests.filter((r) => r.method === 'GET' && r.path === '/v1/refunds')).toHaveLength(1)
    expect(stripe.count(out.effectId)).toBe(0)
    expect((await store.get(out.effectId))!.state).toBe('AMBIGUOUS')
    // Sent again by hand with the same key (as a redispatch would), Stripe still answers the saved 500.
    expect(await fault(target().apply(toEffect(input(refund())), { attempt: 1, recovering: false }))).toMatchObject({ kind: 'unknowable' })
    expect(stripe.count(out.effectId)).toBe(0)
  })

  it('the refund was made before the 500: found by its metadata, COMMITTED, one refund, one POST', async () => {
    const { gate: g } = await gate()
    stripe.fault({ mode: 'apply-then-5xx', route: 'POST /v1/refunds' })
    const out = await g.submit(input(refund()))
    expect(out).toMatchObject({ status: 'committed', receipt: { found: true, status: 'succeeded', amount: 1250 } })
    expect(stripe.count(out.effectId)).toBe(1)
    expect(posts()).toHaveLength(1)
  })

  it('recovery meets the saved 500 too: looked up, then AMBIGUOUS, never a second refund', async () => {
    const h = await gate()
    const e = toEffect(input(refund()))
    await journalDispatched(h.store, e, 1)
    // The process that sent it died after Stripe saved a 500 for the key, before it journaled anything more.
    stripe.fault({ mode: '5xx', route: 'POST /v1/refunds' })
    await fault(target().apply(e, first))
    const report = await (await h.restart()).gate.recover()
    expect(report.effects).toMatchObject([{ effectId: e.id, action: 'marked-ambiguous', outcome: { status: 'ambiguous' } }])
    expect(stripe.count(e.id)).toBe(0)
  })

  it('an operator\'s redispatch a day later: looked up, returned to AUTHORIZED, premises re-checked, then one new refund', async () => {
    const { gate: g, store } = await gate()
    stripe.fault({ mode: '5xx', route: 'POST /v1/refunds' })
    const args = refund()
    const out = await g.submit(input(args, await g.capture('payments', 'refund', args)))
    expect(out.status).toBe('ambiguous')
    // The operator looked at the charge, found no refund, and asks for it to be sent again, a day later.
    stripe.clock = () => Date.now() + 25 * HOUR
    const alice = generateKeyPair('operator', 'alice')
    const operator: OperatorContext = { store, operators: [{ name: 'alice', publicKey: alice.publicKey }], policy: new RulesPolicy([]), key: alice, clock: systemClock }
    const resolved = await resolveEffect(operator, out.effectId, 'redispatch')
    const sent = await redispatch(store, new Map([['payments', target()]]), resolved.snapshot)
    expect(sent).toMatchObject({ status: 'in_flight', state: 'AUTHORIZED', reason: expect.stringContaining('no refund of charge ch_usd carries this effect\'s id') })
    expect(posts()).toHaveLength(1)

    const report = await g.recover()
    expect(report.effects).toMatchObject([{ effectId: out.effectId, found: 'AUTHORIZED', outcome: { status: 'committed' } }])
    expect((await store.history(out.effectId)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AMBIGUOUS', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
    expect(stripe.count(out.effectId)).toBe(1)
    expect(posts()).toHaveLength(2)
  })

  it('Stripe-Should-Retry: true (a lock timeout) is retried with the same key', async () => {
    const { gate: g, slept } = await gate()
    stripe.lockTimeoutNext()
    const out = await g.submit(input(refund()))
    expect(out).toMatchObject({ status: 'committed' })
    expect(posts()).toHaveLength(2)
    expect(slept).toHaveLength(1)
    expect(stripe.count(out.effectId)).toBe(1)
  })
})

describe('A refund answered pending is not one answered succeeded', () => {
  it('the receipt keeps the status Stripe answered with', async () => {
    const { gate: g } = await gate()
    stripe.refundStatus = 'pending'
    const out = await g.submit(input(refund()))
    expect(out).toMatchObject({ status: 'committed', receipt: { status: 'pending' } })
  })

  it('a refund Stripe answers failed moved no money: FAILED, with the reason', async () => {
    const { gate: g } = await gate()
    stripe.refundStatus = 'failed'
    const out = await g.submit(input(refund()))
    expect(out).toMatchObject({ status: 'failed', reason: expect.stringMatching(/Stripe made refund re_\w+, and it is failed: no money went back/) })
  })

  it('laterOutcome asks Stripe again for a pending refund only, and names a failure with its reason', async () => {
    const { gate: g } = await gate()
    stripe.refundStatus = 'pending'
    const out = await g.submit(input(refund()))
    if (out.status !== 'committed') throw new Error(out.status)
    const t = target()
    const e = toEffect(input(refund()))
    expect(await t.laterOutcome(e, out.receipt)).toMatchObject({ status: 'pending', failed: false, pending: true })
    stripe.failRefund(String(out.receipt.refund), 'expired_or_canceled_card')
    expect(await t.laterOutcome(e, out.receipt)).toEqual({
      status: 'failed',
      failed: true,
      pending: false,
      detail: `refund ${String(out.receipt.refund)} of 12.50 USD on charge ch_usd was answered pending, and is failed now (failure_reason: expired_or_canceled_card): the money did not reach the customer`,
    })
    const gets = stripe.requests.filter((r) => r.method === 'GET').length
    expect(await t.laterOutcome(e, { ...out.receipt, status: 'succeeded' })).toBeNull()
    expect(stripe.requests.filter((r) => r.method === 'GET')).toHaveLength(gets)
    expect(stripe.charges.get('ch_usd')!.amount_refunded).toBe(0)
  })
})

describe('StripeRefundTarget answers', () => {
  it('409 in flight is retry-later; the same key with other parameters is refused with Stripe\'s message', async () => {
    const t = target({ timeoutMs: 5000 })
    const e = toEffect(input(refund()))
    stripe.delayNext(400)
    const slow = t.apply(e, first)
    await new Promise((r) => setTimeout(r, 100))
    const busy = await fault(target().apply(e, { attempt: 2, recovering: false, dispatchedAt: Date.now() }))
    expect(busy.kind).toBe('retry-later')
    expect(busy.context).toMatchObject({ status: 409, code: 'idempotency_key_in_use' })
    expect((await slow).refund).toMatch(/^re_/)

    const altered: Effect = { ...e, args: refund({ amount: '10.00' }) }
    const refused = await fault(t.apply(altered, first))
    expect(refused.kind).toBe('refused')
    expect(refused.message).toContain('Keys for idempotent requests can only be used with the same parameters they were first used with')
    expect(stripe.count(e.id)).toBe(1)
  })

  it("Stripe's own refusals are refused with its message: more than is left, a wrong key", async () => {
    const tooMuch = await fault(target().apply(toEffect(input(refund({ amount: '60.00' }))), first))
    expect(tooMuch).toMatchObject({ kind: 'refused', context: { status: 400, code: 'amount_too_large' } })
    expect(tooMuch.message).toContain('Refund amount (6000) is greater than unrefunded amount on charge (5000)')

    const wrongKey = `${KEY}x`
    const denied = await fault(target({ apiKey: wrongKey }).apply(toEffect(input(refund())), first))
    expect(denied).toMatchObject({ kind: 'refused', context: { status: 401 } })
    expect(denied.message).not.toContain(wrongKey)
    expect(stripe.applications.size).toBe(0)
  })

  it('a refused connection is not-sent', async () => {
    const closed = http.createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise((r) => closed.close(r))
    const f = await fault(target({ baseUrl: `http://127.0.0.1:${port}` }).apply(toEffect(input(refund())), first))
    expect(f.kind).toBe('not-sent')
  })

  it('cannot be compensated, and says why', () => {
    const t = target()
    expect((t as EffectTarget).compensation).toBeUndefined()
    expect(t.notCompensable).toMatch(/refund cannot be taken back through the API/)
  })
})

describe('Stripe target from interlock.toml', () => {
  it('is configured by name with the key from the environment, and built by the registry', () => {
    const config = parseConfig(
      `[targets.payments]\ntype = "stripe"\napi_key = "\${STRIPE_API_KEY}"\nbase_url = "${stripe.url}"\ntimeout_ms = 2000\n`,
      { file: '/tmp/interlock.toml', env: { STRIPE_API_KEY: KEY } },
    )
    expect(config.targets.payments).toEqual({ type: 'stripe', apiKey: KEY, baseUrl: stripe.url, timeoutMs: 2000, connectTimeoutMs: 3000 })
    expect(config.secrets).toEqual([KEY])
    const t = createTarget('payments', config.targets.payments!, { secrets: config.secrets })
    targets.push(t as StripeRefundTarget)
    expect(t).toBeInstanceOf(StripeRefundTarget)
    expect(t.tier).toBe(1)
  })

  it('defaults to the real API and refuses a key written into the file', () => {
    const config = parseConfig('[targets.payments]\ntype = "stripe"\napi_key = "${STRIPE_API_KEY}"\n', { file: '/tmp/interlock.toml', env: { STRIPE_API_KEY: KEY } })
    expect(config.targets.payments).toMatchObject({ baseUrl: 'https://api.stripe.com' })
    expect(() => parseConfig(`[targets.payments]\ntype = "stripe"\napi_key = "${KEY}"\n`, { file: '/tmp/interlock.toml', env: {} })).toThrow(
      /is invalid/,
    )
  })
})
