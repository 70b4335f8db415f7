/**
 * A LangGraph agent process for the crash tests: one run of the refund agent
 * (langgraph-agent.ts) on the SQLite checkpointer in the plan's folder, with
 * the tools gated by Interlock or plain, and the durability and tool-node
 * shape the plan names. Phase "run" starts the run; phase "resume" continues
 * it as a restarted app does: from the checkpoint (or, under durability
 * "exit", from the original input), after recovering the thread when
 * Interlock is in. It prints what the checkpoint held before resuming and the
 * run's messages.
 *
 * How it dies: gated, at the Interlock crash point the parent arms
 * (INTERLOCK_CRASH_AT); plain, by its own SIGKILL once the plan's n-th send
 * has been answered (the same moment: applied, nothing after it recorded).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { HumanMessage } from '@langchain/core/messages'
import type { StructuredToolInterface } from '@langchain/core/tools'
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite'
import { openInterlock } from '../../src/core/index.js'
import { gatedTool, resumeGraph, type Identity } from '../../src/integrations/langgraph/index.js'
import { emailSchema, MAIL_FROM, plainEmailTool, plainRefundTool, refundAgent, refundSchema, scriptedModel, transcript, type Shape } from './langgraph-agent.js'

export interface LanggraphChildPlan {
  dir: string
  threadId: string
  phase: 'run' | 'resume'
  shape: Shape
  durability: 'exit' | 'async' | 'sync'
  /** Tools through Interlock, or calling the services themselves. */
  gated: boolean
  identity?: Identity
  tool: 'refund' | 'email_customer'
  /** The calls of the model's one tool-calling message. */
  calls: Record<string, unknown>[]
  stripe: { url: string; apiKey: string }
  sendgrid: { url: string; apiKey: string }
  /** Plain tools, phase "run": SIGKILL this process once this many sends have been answered. */
  dieAfterSends?: number
  /** Send shape, phase "run": each call's task starts once the one before it has finished. */
  oneAfterAnother?: boolean
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as LanggraphChildPlan
const interlock = await openInterlock({ cwd: plan.dir, env: { STRIPE_API_KEY: plan.stripe.apiKey, SENDGRID_API_KEY: plan.sendgrid.apiKey } })
const checkpointer = SqliteSaver.fromConnString(join(plan.dir, 'checkpoints.db'))

let sends = 0
const afterSend = () => {
  sends++
  if (plan.phase === 'run' && plan.dieAfterSends !== undefined && sends >= plan.dieAfterSends) process.kill(process.pid, 'SIGKILL')
}

function tools(): StructuredToolInterface[] {
  if (plan.tool === 'refund') {
    if (!plan.gated) return [plainRefundTool(plan.stripe, afterSend)]
    return [gatedTool(interlock, { name: 'refund', description: 'Refund part or all of a Stripe charge.', schema: refundSchema }, { target: 'stripe', identity: plan.identity })]
  }
  if (!plan.gated) return [plainEmailTool(plan.sendgrid, afterSend)]
  return [
    gatedTool(interlock, { name: 'email_customer', description: 'Email the customer.', schema: emailSchema }, {
      target: 'mail',
      action: 'send',
      args: (input) => ({ from: MAIL_FROM, to: String(input.to), subject: String(input.subject), text: String(input.text) }),
      identity: plan.identity,
    }),
  ]
}

// Send shape: the n-th call's task waits for the one before it, and for that task's writes to be saved.
const finished = plan.calls.map(() => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => (resolve = r))
  return { promise, resolve }
})
const around = async (call: { args: Record<string, unknown> }, run: () => Promise<unknown>) => {
  const n = plan.calls.findIndex((c) => JSON.stringify(c) === JSON.stringify(call.args))
  if (n > 0) {
    await finished[n - 1]!.promise
    await new Promise((r) => setTimeout(r, 100))
  }
  const out = await run()
  finished[n]!.resolve()
  return out
}

const model = scriptedModel([plan.calls.map((args) => ({ name: plan.tool, args }))])
const graph = refundAgent({ model, tools: tools(), shape: plan.shape, checkpointer, ...(plan.oneAfterAnother && plan.phase === 'run' ? { around } : {}) })
const config = { configurable: { thread_id: plan.threadId }, durability: plan.durability }
const input = { messages: [new HumanMessage('Refund the charges in this ticket and tell the customers.')] }

let saved: { next: string[]; messages: ReturnType<typeof transcript>; tasks: { name: string; done: boolean }[] } | undefined
let out
if (plan.phase === 'run') {
  out = await graph.invoke(input, config)
} else {
  const s = await graph.getState(config)
  saved = { next: [...s.next], messages: transcript(s.values.messages ?? []), tasks: s.tasks.map((t) => ({ name: t.name, done: t.result !== undefined })) }
  const again = plan.durability === 'exit' ? input : null
  out = plan.gated ? await resumeGraph(interlock, graph, config, again) : await graph.invoke(again, config)
}
process.stdout.write(`${JSON.stringify({ saved, messages: transcript(out.messages) })}\n`)
checkpointer.db.close()
await interlock.close()
