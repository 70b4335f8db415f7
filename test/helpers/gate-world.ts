/**
 * The setting the outbox integration tests share: a real store of one kind
 * (outbox-stores.ts, with its raw connection for forging), an inline gate in
 * front of it holding large refunds for operators, and two counting targets,
 * payments (tier 1) and mail (tier 3). Each test adds its own keys, trust
 * and operators.
 */
import type { PolicyRuleConfig } from '../../src/core/config/types.js'
import { Gate, type GateOptions } from '../../src/core/gate.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import type { Store } from '../../src/core/stores/store.js'
import { CountingTarget } from './counting-target.js'
import type { OutboxHarness } from './outbox-stores.js'

/** Refunds above 500.00 USD wait for two operators' releases, each good for an hour. */
export const LARGE_REFUNDS: PolicyRuleConfig = { name: 'large-refunds', target: 'payments', when: [{ arg: 'amount', above: '500.00', currency: 'USD' }], quorum: 2, releaseTtlMs: 3_600_000 }
export const policy = new RulesPolicy([LARGE_REFUNDS])

export interface GateWorld {
  h: OutboxHarness
  store: Store
  gate: Gate
  payments: CountingTarget
  mail: CountingTarget
  close(): Promise<void>
}

/** A store of the kind `make` opens and a gate over it (as `gateStore` wraps it) with the policy, one attempt per send, and `options` (e.g. signing). */
export async function gateWorld(make: () => Promise<OutboxHarness>, options: Partial<GateOptions> = {}, gateStore: (store: Store) => Store = (s) => s): Promise<GateWorld> {
  const h = await make()
  const store = await h.open()
  const payments = new CountingTarget('payments', 1)
  const mail = new CountingTarget('mail', 3)
  const gate = new Gate({ store: gateStore(store), targets: [payments, mail], policy, retry: { maxAttempts: 1, backoffMs: 0 }, ...options })
  return { h, store, gate, payments, mail, close: async () => { await gate.close(); await store.close(); await h.dispose() } }
}

/** A refund of `amount` USD on charge ch_1, proposed on `thread`. */
export const refund = (amount: string, thread = 'agent-1') => ({ thread, target: 'payments', action: 'refund', args: { amount, currency: 'USD', to: 'acct_1' }, premises: { charge: 'ch_1' } })

/** What a verify report found, message by message. */
export const messages = (r: { problems: { message: string }[] }) => r.problems.map((p) => p.message)
