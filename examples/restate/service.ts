/**
 * A Restate service whose `refund` handler has three effects, each through
 * Interlock instead of a bare `ctx.run`: a Stripe refund (tier 1: Stripe
 * deduplicates by the effect id as Idempotency-Key), a line in the ledger
 * service (tier 2: it can be asked whether an effect happened) and a notice
 * to the customer (tier 3: neither). Kill this process at any moment and
 * Restate runs the handler again: no refund, line or notice is sent twice,
 * and a notice that may or may not have gone out fails the invocation as
 * AMBIGUOUS, with the command an operator resolves it with.
 *
 *   npx restate-server                                      # Restate, from npm
 *   export INTERLOCK_CONFIG=examples/restate/interlock.toml STRIPE_API_KEY=sk_test_… \
 *          STRIPE_URL=https://api.stripe.com LEDGER_URL=… NOTICES_URL=…
 *   node --import tsx examples/restate/service.ts           # listens on $PORT (9080)
 *   curl localhost:9070/deployments --json '{"uri": "http://localhost:9080"}'
 *   curl localhost:8080/orders/refund --json '{"order": "o-1", "charge": "ch_1", "amount": "12.50", "currency": "usd"}'
 *
 * Do not call `gate.recover()` at start beside Restate: the retried
 * invocation carries its own effect on, and two processes must not carry on
 * the same one at once.
 */
import * as restate from '@restatedev/restate-sdk'
import { openInterlock } from 'agent-interlock'
import { interlockRun } from 'agent-interlock/restate'

interface Refund {
  order: string
  charge: string
  amount: string
  currency: string
}

const interlock = await openInterlock()

const orders = restate.service({
  name: 'orders',
  handlers: {
    refund: async (ctx: restate.Context, r: Refund) => {
      const refund = await interlockRun(ctx, interlock, {
        target: 'payments',
        action: 'refund',
        args: { charge: r.charge, amount: r.amount, currency: r.currency, reason: 'requested_by_customer' },
      })
      const line = await interlockRun(ctx, interlock, { target: 'ledger', action: 'record', args: { order: r.order, refund: String(refund.receipt.refund) } })
      const notice = await interlockRun(ctx, interlock, { target: 'notices', action: 'notify', args: { order: r.order, text: `Your refund of ${r.amount} ${r.currency.toUpperCase()} is on its way.` } })
      return { refund: refund.receipt.refund, effects: [refund.effectId, line.effectId, notice.effectId] }
    },
  },
})

await restate.serve({ services: [orders], port: Number(process.env.PORT ?? 9080) })
