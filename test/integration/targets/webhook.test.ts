/**
 * The webhook target through a real gate on a real journal, against the
 * receiver of src/emulators/webhook.ts (signatures verified with
 * verifyWebhookSignature, one action per Idempotency-Key), with the faults
 * the receiver plays. Judged by the receiver's own deliveries and ledger.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { toEffect } from '../../../src/core/effect.js'
import { WebhookTarget } from '../../../src/core/targets/webhook/webhook-target.js'
import type { FaultMode } from '../../emulators/emulator.js'
import { WebhookReceiver } from '../../emulators/webhook.js'
import { journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'

const SECRET = 'whsec_test_receiver_secret_that_must_never_leak'
let receiver: WebhookReceiver
let harness: SqliteGate | undefined

beforeEach(async () => {
  receiver = await new WebhookReceiver(SECRET).start()
})
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
  await receiver.close()
})

async function gate(o: { secret?: string; now?: () => number } = {}): Promise<SqliteGate> {
  const target = () => new WebhookTarget('hooks', { url: `${receiver.url}/hooks`, secret: o.secret ?? SECRET, timeoutMs: 2000, connectTimeoutMs: 1000 }, { secrets: [o.secret ?? SECRET], now: o.now })
  harness = await sqliteGate(() => [target()])
  return harness
}

const shipped = (order: string) => ({ thread: `order-${order}`, target: 'hooks', action: 'order_shipped', args: { order, carrier: 'post' } })

describe('webhook target and receiver', () => {
  it('delivers the args signed, the effect id as Idempotency-Key; the receiver verifies and acts once; no secret in the journal', async () => {
    const { gate: g, store } = await gate()
    const out = await g.submit(shipped('o-1'))
    expect(out).toMatchObject({ status: 'committed', receipt: { status: 200 } })
    expect(receiver.deliveries).toEqual([{ key: out.effectId, body: { carrier: 'post', order: 'o-1' }, headers: expect.objectContaining({ 'interlock-signature': expect.stringMatching(/^t=\d+,v1=[0-9a-f]{64}$/) }), verified: true }])
    expect([receiver.count(out.effectId), receiver.badSignatures]).toEqual([1, 0])
    expect(await journalText(store)).not.toContain(SECRET)
  })

  it.each<[FaultMode, number]>([
    // Acted on, answer lost: sent again with the same key, answered from what the receiver kept.
    ['apply-then-drop', 2],
    // Not acted on, and no key kept: the delivery sent again is the one acted on.
    ['5xx', 2],
    ['reset-before-apply', 2],
  ])('%s: sent again with the same key, acted on once', async (mode, deliveries) => {
    const { gate: g } = await gate()
    receiver.fault({ mode })
    const out = await g.submit(shipped(`o-${mode}`))
    expect(out.status).toBe('committed')
    expect(receiver.count(out.effectId)).toBe(1)
    expect(receiver.deliveries.map((d) => [d.key, d.verified])).toEqual(Array(deliveries).fill([out.effectId, true]))
  })

  it('a signature under another secret, or signed too long ago, is refused (FAILED) and nothing is done; both counted', async () => {
    const wrong = await gate({ secret: 'whsec_not_the_receivers' })
    const a = await wrong.gate.submit(shipped('o-2'))
    expect(a).toMatchObject({ status: 'failed' })
    await wrong.cleanup()
    const late = await gate({ now: () => Date.now() - 10 * 60_000 })
    const b = await late.gate.submit(shipped('o-3'))
    expect(b).toMatchObject({ status: 'failed' })
    expect([receiver.count(toEffect(shipped('o-2')).id), receiver.count(toEffect(shipped('o-3')).id)]).toEqual([0, 0])
    expect(receiver.badSignatures).toBe(2)
    expect(receiver.deliveries.map((d) => d.verified)).toEqual([false, false])
  })
})
