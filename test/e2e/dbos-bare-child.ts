/**
 * The counter-test's DBOS app: the example's refund and email as bare DBOS
 * steps that call the services directly, without Interlock. BARE_CRASH_AFTER
 * names the step whose process SIGKILLs itself right after the service
 * answered, before DBOS checkpointed the step: the moment Interlock's
 * `after-apply` crash point stands for in the example.
 *
 *   node test/e2e/dbos-bare-child.ts start <workflow id> '<order JSON>' | resume <workflow id>
 *
 * Run by plain node (types stripped), like the example: erasable syntax only.
 */
import { DBOS } from '@dbos-inc/dbos-sdk'

interface Order {
  id: string
  charge: string
  amount: string
  currency: string
  email: string
}

const env = process.env
DBOS.setConfig({ name: 'bare-returns', systemDatabaseUrl: env.DATABASE_URL!, applicationVersion: 'bare-1', logLevel: 'error' })

function diesHere(step: string): void {
  if (env.BARE_CRASH_AFTER === step) process.kill(process.pid, 'SIGKILL')
}

async function answer(res: Response, what: string): Promise<void> {
  if (!res.ok) throw new Error(`${what}: ${res.status} ${await res.text()}`)
}

const refund = DBOS.registerStep(
  async (order: Order) => {
    const minor = Math.round(Number(order.amount) * 100)
    const res = await fetch(`${env.STRIPE_BASE_URL}/v1/refunds`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.STRIPE_API_KEY}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ charge: order.charge, amount: String(minor) }).toString(),
    })
    await answer(res, 'refund')
    diesHere('refund')
    return ((await res.json()) as { id: string }).id
  },
  { name: 'refund' },
)

const email = DBOS.registerStep(
  async (order: Order) => {
    const res = await fetch(`${env.SENDGRID_BASE_URL}/v3/mail/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.SENDGRID_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        personalizations: [{ to: [{ email: order.email }] }],
        from: { email: 'returns@shop.example' },
        subject: `Your refund for order ${order.id}`,
        content: [{ type: 'text/plain', value: `We refunded ${order.amount} ${order.currency.toUpperCase()} to your card.` }],
      }),
    })
    await answer(res, 'email')
    diesHere('email')
    return res.headers.get('x-message-id') ?? ''
  },
  { name: 'email' },
)

const bareReturn = DBOS.registerWorkflow(
  async (order: Order) => {
    return { refund: await refund(order), mail: await email(order) }
  },
  { name: 'bareReturn' },
)

const [command, workflowID, orderJson] = process.argv.slice(2)
await DBOS.launch()
try {
  const handle = command === 'start' ? await DBOS.startWorkflow(bareReturn, { workflowID })(JSON.parse(orderJson!) as Order) : DBOS.retrieveWorkflow(workflowID!)
  console.log(JSON.stringify({ workflowID, status: 'SUCCESS', result: await handle.getResult() }))
} finally {
  await DBOS.shutdown()
}
