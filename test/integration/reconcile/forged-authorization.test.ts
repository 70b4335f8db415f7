/**
 * reconcile-effects sweeps a shared store, which anyone with write access to
 * the database can write to. Like a relay (relay/send-check.ts), it sends
 * nothing whose journal authorizes it without the operators' policy or a
 * valid quorum: a forged AUTHORIZED record, appended through the store's own
 * append (so its chain is correct), is refused, reported, and the effect held
 * again for operators;
 * a genuinely released effect left in flight is finished as before.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { systemClock } from '../../../src/core/clock.js'
import type { OperatorConfig, PolicyRuleConfig } from '../../../src/core/config/types.js'
import { generateKeyPair, type KeyPair } from '../../../src/core/crypto/keys.js'
import { toEffect } from '../../../src/core/effect.js'
import { ExitCode } from '../../../src/core/errors.js'
import { Gate } from '../../../src/core/gate.js'
import { proposal } from '../../../src/core/gate-context.js'
import { releaseEffect } from '../../../src/core/outbox/release.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { reconcileEffects } from '../../../src/core/reconcile/reconcile.js'
import type { Store } from '../../../src/core/stores/store.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { dropOutboxDatabase, postgresOutbox, sqliteOutbox, type OutboxHarness } from '../../helpers/outbox-stores.js'

const RULE: PolicyRuleConfig = { name: 'large-refunds', target: 'payments', when: [{ arg: 'amount', above: '500.00' }], quorum: 2, releaseTtlMs: 3_600_000 }
const policy = new RulesPolicy([RULE])
const keys: Record<string, KeyPair> = Object.fromEntries(['alice', 'bob'].map((n) => [n, generateKeyPair('operator', n)]))
const operators: OperatorConfig[] = ['alice', 'bob'].map((n) => ({ name: n, publicKey: keys[n]!.publicKey }))

afterAll(() => dropOutboxDatabase())

let threads = 0
const refund = (amount: string) => ({
  thread: `agent-${++threads}`,
  target: 'payments',
  action: 'refund',
  args: { amount, recipient: 'acct_customer' },
})

describe.each([
  ['SQLite', sqliteOutbox],
  ['PostgreSQL', postgresOutbox],
] as const)('reconcile-effects on a %s outbox', (_kind, make) => {
  async function setUp(): Promise<{ h: OutboxHarness; store: Store; payments: CountingTarget; gate: Gate; sweep: () => ReturnType<typeof reconcileEffects> }> {
    const h = await make()
    const store = await h.open()
    const payments = new CountingTarget('payments', 1)
    // A gate that stops after DISPATCHED's one try ends in "not sent": the effect is left in flight.
    const gate = new Gate({ store, targets: [payments], policy, retry: { maxAttempts: 1, backoffMs: 0 } })
    const sweep = () =>
      reconcileEffects({ store, storeConfig: h.config, targets: [payments], policy, operators, olderThanMs: 0, concurrency: 1, retry: { maxAttempts: 1, backoffMs: 0 }, laterWithinMs: 0 })
    return { h, store, payments, gate, sweep }
  }

  it('a HELD effect forged to AUTHORIZED (no release) is refused: nothing sent, held again for operators, exit 5 naming why', async () => {
    const { h, store, payments, gate, sweep } = await setUp()
    try {
      const held = await gate.submit(refund('900.00'))
      expect(held.status).toBe('held')
      // Someone with write access: the store's own append, so the chain is correct.
      expect((await store.append([{ effectId: held.effectId, from: 'HELD', to: 'AUTHORIZED', data: { rule: RULE.name, releases: [], signers: [] } }]))[0]!.ok).toBe(true)
      const before = (await store.history(held.effectId)).length

      const result = await sweep()
      expect(result.status).toBe('refused')
      expect(result.exitCode).toBe(ExitCode.INTEGRITY)
      const e = result.report!.effects.find((x) => x.effectId === held.effectId)!
      expect(e).toMatchObject({ found: 'AUTHORIZED', action: 'refused' })
      expect(e.refused!.join('\n')).toMatch(/authorized \(record \d+\) without a valid quorum of releases/)
      expect(e.outcome).toMatchObject({ status: 'held', rule: 'large-refunds' })
      expect(payments.calls.get(held.effectId)).toBeUndefined()
      const after = await store.history(held.effectId)
      expect(after.length).toBe(before + 1)
      expect(after.at(-1)).toMatchObject({ state: 'HELD', data: { rule: 'large-refunds', heldAgain: e.refused } })
    } finally {
      await gate.close()
      await store.close()
      await h.dispose()
    }
  })

  it('a PROPOSED effect the policy holds, forged straight to AUTHORIZED, is refused; one it lets through is finished', async () => {
    const { h, store, payments, gate, sweep } = await setUp()
    try {
      const big = await journalProposed(store, refund('900.00'))
      const small = await journalProposed(store, refund('12.00'))
      for (const id of [big, small]) expect((await store.append([{ effectId: id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} }]))[0]!.ok).toBe(true)

      const result = await sweep()
      expect(result.exitCode).toBe(ExitCode.INTEGRITY)
      const byId = new Map(result.report!.effects.map((e) => [e.effectId, e]))
      expect(byId.get(big)).toMatchObject({ action: 'refused', outcome: { status: 'held' } })
      expect(byId.get(big)!.refused!.join('\n')).toContain('rule "large-refunds" holds it')
      expect(byId.get(small)).toMatchObject({ action: 'resumed', outcome: { status: 'committed' } })
      expect(payments.count(big)).toBe(0)
      expect(payments.count(small)).toBe(1)
    } finally {
      await gate.close()
      await store.close()
      await h.dispose()
    }
  })

  it('released by two operators and left AUTHORIZED by a crash: finished, once (the check lets a real quorum through)', async () => {
    const { h, store, payments, gate, sweep } = await setUp()
    try {
      const held = await gate.submit(refund('900.00'))
      const ctx = (who: string) => ({ store, operators, policy, key: keys[who]!, clock: systemClock })
      await releaseEffect(ctx('alice'), held.effectId)
      expect((await releaseEffect(ctx('bob'), held.effectId)).state).toBe('AUTHORIZED')

      const result = await sweep()
      expect(result.status).toBe('clean')
      expect(result.report!.effects).toMatchObject([{ effectId: held.effectId, found: 'AUTHORIZED', outcome: { status: 'committed' } }])
      expect(payments.count(held.effectId)).toBe(1)
    } finally {
      await gate.close()
      await store.close()
      await h.dispose()
    }
  })
})

/** PROPOSED only, as an outbox agent writes it. */
async function journalProposed(store: Store, input: ReturnType<typeof refund>): Promise<string> {
  const effect = toEffect(input)
  const [r] = await store.append([{ effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, 1), effect, tier: 1 }])
  expect(r!.ok).toBe(true)
  return effect.id
}
