/**
 * Temporal activities whose effects go through Interlock: a Stripe refund
 * (tier 1) and a notice to the customer (tier 3). A worker that dies after
 * the refund went out and before the activity completed is retried by
 * Temporal: the next attempt finds the refund by its effect id instead of
 * refunding again. A notice that may or may not have gone out fails the
 * activity with a non-retryable `InterlockAmbiguous` ApplicationFailure that
 * the workflow can catch.
 *
 * Register them with your worker as usual:
 *
 *   import * as activities from './activities.js'
 *   await Worker.create({ taskQueue: 'orders', workflowsPath, activities })
 *
 * interlock.toml (or $INTERLOCK_CONFIG) names the targets; the gate sleeps
 * between tries with `activitySleep`, so a cancelled activity stops waiting.
 */
import { openInterlock } from 'agent-interlock'
import { activitySleep, interlockSubmit } from 'agent-interlock/temporal'

export interface Refund {
  order: string
  charge: string
  amount: string
  currency: string
}

const interlock = await openInterlock({ sleep: activitySleep })

export async function refund(r: Refund): Promise<{ refund: string; effect: string }> {
  const outcome = await interlockSubmit(interlock, {
    target: 'payments',
    action: 'refund',
    args: { charge: r.charge, amount: r.amount, currency: r.currency, reason: 'requested_by_customer' },
  })
  return { refund: String(outcome.receipt.refund), effect: outcome.effectId }
}

export async function notify(r: Refund): Promise<{ effect: string }> {
  const outcome = await interlockSubmit(interlock, {
    target: 'notices',
    action: 'notify',
    args: { order: r.order, text: `Your refund of ${r.amount} ${r.currency.toUpperCase()} is on its way.` },
  })
  return { effect: outcome.effectId }
}
