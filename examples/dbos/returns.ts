/**
 * A DBOS workflow whose steps change the world through Interlock: when a
 * return is accepted, refund the charge (Stripe), file a credit note (S3) and
 * email the customer (SendGrid).
 *
 * DBOS checkpoints each step's result after the step returns. A process that
 * dies between a step's effect and that checkpoint runs the step again when
 * DBOS recovers the workflow; through `interlockStep`, that second run finds
 * the effect in Interlock's journal instead of making it again: the refund is
 * sent again under the same idempotency key (Stripe keeps one), the credit
 * note is looked for before it is put again, and the email, which nobody can
 * look up, ends the workflow AMBIGUOUS for an operator instead of going twice.
 *
 *   node returns.ts start  <workflow id> '<order JSON>'   start a workflow and wait for its end
 *   node returns.ts resume <workflow id>                  recover pending workflows, wait for this one
 *
 * Each prints one JSON line: the workflow's result, or the error it ended with.
 * Configuration: DATABASE_URL (DBOS's system database, which also holds
 * Interlock's journal), and interlock.toml's variables (see README.md).
 */
import { DBOS } from '@dbos-inc/dbos-sdk'
import { openInterlock } from 'agent-interlock'
import { interlockStep, isInterlockStepError } from 'agent-interlock/dbos'

interface Order {
  id: string
  charge: string
  /** Decimal string, e.g. "12.50". */
  amount: string
  currency: string
  email: string
}

const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl) throw new Error('set DATABASE_URL to the PostgreSQL database DBOS and Interlock share')

// interlock.toml from $INTERLOCK_CONFIG, else beside this file. A DBA installs the journal's schema with
// `interlock install`; the example installs it on first start.
const interlock = await openInterlock({
  configPath: process.env.INTERLOCK_CONFIG ?? new URL('./interlock.toml', import.meta.url).pathname,
  store: { autoInstall: true },
})

// DBOS recovers only the workflows of its own application version: pin it, so a restart of the same code recovers them.
DBOS.setConfig({ name: 'returns', systemDatabaseUrl: databaseUrl, applicationVersion: 'returns-1', logLevel: process.env.DBOS_LOG_LEVEL ?? 'info' })

async function acceptReturn(order: Order) {
  const refund = await interlockStep(interlock, 'refund', {
    target: 'payments',
    action: 'refund',
    args: { charge: order.charge, amount: order.amount, currency: order.currency },
  })
  const note = await interlockStep(interlock, 'credit-note', {
    target: 'notes',
    action: 'put',
    args: {
      key: `${order.id}.json`,
      body: JSON.stringify({ order: order.id, refund: refund.receipt.id, amount: order.amount, currency: order.currency }),
      content_type: 'application/json',
    },
  })
  const mail = await interlockStep(interlock, 'email', {
    target: 'mail',
    action: 'send',
    args: {
      from: 'returns@shop.example',
      to: order.email,
      subject: `Your refund for order ${order.id}`,
      text: `We refunded ${order.amount} ${order.currency.toUpperCase()} to your card.`,
    },
  })
  return { refund: refund.effectId, note: note.effectId, mail: mail.effectId }
}

const acceptReturnWorkflow = DBOS.registerWorkflow(acceptReturn, { name: 'acceptReturn' })

const [command, workflowID, orderJson] = process.argv.slice(2)
if ((command !== 'start' && command !== 'resume') || !workflowID || (command === 'start' && !orderJson)) {
  console.error("usage: node returns.ts start <workflow id> '<order JSON>' | resume <workflow id>")
  process.exit(2)
}

// launch() also recovers this executor's pending workflows: a restart after a crash carries them on.
await DBOS.launch()
try {
  const handle =
    command === 'start'
      ? await DBOS.startWorkflow(acceptReturnWorkflow, { workflowID })(JSON.parse(orderJson!) as Order)
      : DBOS.retrieveWorkflow<ReturnType<typeof acceptReturn>>(workflowID)
  try {
    console.log(JSON.stringify({ workflowID, status: 'SUCCESS', result: await handle.getResult() }))
  } catch (e) {
    // An error DBOS gives back from its records is a plain Error with the fields it had: tell Interlock's by its code.
    const err = e as Error & { code?: string; effectId?: string; hint?: string }
    const error = isInterlockStepError(err) ? { code: err.code, effectId: err.effectId, message: err.message, hint: err.hint } : { message: err.message }
    console.log(JSON.stringify({ workflowID, status: 'ERROR', error }))
    process.exitCode = 1
  }
} finally {
  await DBOS.shutdown()
  await interlock.close()
}
