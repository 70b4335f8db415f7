/** Compensation through the same gate and policy, linked to the original, idempotent; refused where a target cannot undo. */
import { afterEach, describe, expect, it } from 'vitest'
import type { Effect } from '../../../src/core/effect.js'
import { Gate } from '../../../src/core/gate.js'
import { compensateEffect } from '../../../src/core/outbox/compensate.js'
import { effectDetails } from '../../../src/core/outbox/show.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'

const policy = new RulesPolicy([{ name: 'large', target: 'payments', when: [{ arg: 'amount', above: '500.00' }], quorum: 1, releaseTtlMs: 60_000 }])

let h: OutboxHarness | undefined
let store: Store | undefined
afterEach(async () => {
  await store?.close()
  await h?.dispose()
})

async function gateWith(compensable: boolean): Promise<{ gate: Gate; payments: CountingTarget }> {
  h = await sqliteOutbox()
  store = await h.open()
  const payments = new CountingTarget('payments', 1)
  if (compensable) {
    Object.assign(payments, { compensation: (e: Effect) => ({ action: 'reverse', args: { amount: e.args.amount as string, of: e.id } }) })
  } else {
    Object.assign(payments, { notCompensable: 'a payout cannot be recalled' })
  }
  return { gate: new Gate({ store, targets: [payments], policy }), payments }
}

describe('outbox compensate', () => {
  it('submits the linked compensating effect through the gate, once however often asked', async () => {
    const { gate, payments } = await gateWith(true)
    const original = await gate.submit({ thread: 't', target: 'payments', action: 'refund', args: { amount: '20.00' } })
    expect(original.status).toBe('committed')
    const first = await compensateEffect(gate, store!, original.effectId)
    expect(first.outcome.status).toBe('committed')
    expect(first.compensation).toMatchObject({ action: 'reverse', key: `compensates:${original.effectId}`, args: { of: original.effectId } })
    const again = await compensateEffect(gate, store!, original.effectId)
    expect(again.effectId).toBe(first.effectId)
    expect(payments.applied.get(first.effectId)).toBe(1)
    expect((await effectDetails(store!, first.effectId)).compensates).toBe(original.effectId)
  })

  it('a compensation the policy holds is HELD like any other effect', async () => {
    const { gate } = await gateWith(true)
    const committed = await gate.submit({ thread: 't', target: 'payments', action: 'refund', args: { amount: '400.00' } })
    // A rule that only catches reversals above 300.00.
    const strict = new Gate({ store: store!, targets: [gate.target('payments')], policy: new RulesPolicy([{ name: 'reversals', action: 'reverse', when: [{ arg: 'amount', above: '300.00' }], quorum: 1, releaseTtlMs: 60_000 }]) })
    const r = await compensateEffect(strict, store!, committed.effectId)
    expect(r.outcome).toMatchObject({ status: 'held', rule: 'reversals' })
  })

  it('refuses an effect that is not COMMITTED, and a target that cannot compensate, saying why', async () => {
    const { gate } = await gateWith(false)
    const held = await gate.submit({ thread: 't', target: 'payments', action: 'refund', args: { amount: '900.00' } })
    await expect(compensateEffect(gate, store!, held.effectId)).rejects.toMatchObject({ code: 'E_CONFLICT' })
    const done = await gate.submit({ thread: 't', target: 'payments', action: 'refund', args: { amount: '5.00' } })
    await expect(compensateEffect(gate, store!, done.effectId)).rejects.toMatchObject({
      code: 'E_NOT_COMPENSABLE',
      message: expect.stringContaining('a payout cannot be recalled'),
    })
  })
})
