/**
 * A refund agent on LangGraph whose refunds go through Interlock.
 *
 *   node refund-agent.ts <thread> "Refund 5.00 usd of ch_123"
 *   node refund-agent.ts <thread> --resume
 *
 * The agent reads the charge (kept in the graph state), then refunds it. The
 * refund tool keeps its declaration; `gatedTool` makes its effect a call
 * through Interlock: journaled under the thread, keyed by the tool_call_id,
 * resting on the charge as the agent read it.
 *
 * - Crash (the process killed mid-refund): `--resume` recovers the thread
 *   (the refund re-applied with the same Stripe idempotency key) and the
 *   graph goes on from its checkpoint; the re-run tool finds the refund done.
 * - Hold (a [[policy.rules]] entry): the run pauses; an operator runs
 *   `interlock outbox release <id>`; `--resume` finishes it.
 * - Rejection (the charge changed since it was read): the model is told what
 *   changed and that nothing was sent.
 *
 * Needs Node 22.18+ (it runs as TypeScript), the interlock.toml beside it,
 * STRIPE_API_KEY and STRIPE_BASE_URL (https://api.stripe.com, or a local
 * emulator). The model is a scripted stand-in so the example
 * runs without a key: put your chat model (ChatAnthropic, ChatOpenAI...) in
 * its place.
 */
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { tool, type ToolRuntime } from '@langchain/core/tools'
import { Annotation, Command, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph'
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt'
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite'
import { openInterlock } from 'agent-interlock'
import { gatedTool, heldInterrupts, resumeGraph } from 'agent-interlock/langgraph'
import { z } from 'zod'

const STRIPE = process.env.STRIPE_BASE_URL
const auth = { authorization: `Bearer ${process.env.STRIPE_API_KEY}` }

interface Charge { id: string; status: string; amount: number; amount_refunded: number; disputed: boolean; currency: string }
const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  charges: Annotation<Record<string, Charge>>({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
})

// A read: the charge as Stripe has it, kept in the state the refund decision rests on.
const lookupCharge = tool(
  async ({ charge }, runtime: ToolRuntime) => {
    const c = (await (await fetch(`${STRIPE}/v1/charges/${charge}`, { headers: auth })).json()) as Charge
    const seen = { id: c.id, status: c.status, amount: c.amount, amount_refunded: c.amount_refunded, disputed: c.disputed, currency: c.currency }
    return new Command({ update: { charges: { [charge]: seen }, messages: [new ToolMessage({ content: JSON.stringify(seen), tool_call_id: runtime.toolCallId, name: 'lookup_charge' })] } })
  },
  { name: 'lookup_charge', description: 'Read a Stripe charge.', schema: z.object({ charge: z.string() }) },
)

// The refund, declared as before; its body was a call to Stripe, now it is Interlock's.
const refundDeclared = {
  name: 'refund',
  description: 'Refund part or all of a Stripe charge.',
  schema: z.object({ charge: z.string(), amount: z.string().describe('e.g. "5.00"'), currency: z.string() }),
}

const interlock = await openInterlock()
const refund = gatedTool(interlock, refundDeclared, {
  target: 'stripe',
  premises: (args, state: typeof State.State) => {
    const seen = state.charges[String(args.charge)]
    return seen ? { charge: { ...seen } } : undefined
  },
  onHeld: 'interrupt',
})

// The scripted stand-in for a chat model: read the charge, refund it, report.
function decide(messages: BaseMessage[]): BaseMessage {
  const [, amount, currency, charge] = /refund ([\d.]+) (\w+) of (\w+)/i.exec(String(messages[0]!.content)) ?? []
  const last = messages.at(-1)!
  const call = (name: string, args: object) => new AIMessage({ content: '', tool_calls: [{ name, args, id: `call_${crypto.randomUUID()}`, type: 'tool_call' }] })
  if (last.getType() === 'human') return call('lookup_charge', { charge })
  if (last.getType() === 'tool' && last.name === 'lookup_charge') return call('refund', { charge, amount, currency: currency!.toLowerCase() })
  return new AIMessage(`Refund: ${String(last.content)}`)
}
const model = fakeModel()
for (let i = 0; i < 10; i++) model.respond(decide)

const tools = [lookupCharge, refund]
const bound = model.bindTools(tools)
const graph = new StateGraph(State)
  .addNode('agent', async (state) => ({ messages: [await bound.invoke(state.messages)] }))
  .addNode('tools', new ToolNode(tools))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', toolsCondition, ['tools', END])
  .addEdge('tools', 'agent')
  .compile({ checkpointer: SqliteSaver.fromConnString('checkpoints.db') })

const [thread, request] = process.argv.slice(2)
const config = { configurable: { thread_id: thread! }, durability: 'sync' as const }
let out
if (request === '--resume') {
  // Recover the thread, then go on from the checkpoint (answering the pause, if the run is paused).
  const paused = (await graph.getState(config)).tasks.some((t) => t.interrupts.length > 0)
  out = await resumeGraph(interlock, graph, config, paused ? new Command({ resume: 'released' }) : null)
} else {
  out = await graph.invoke({ messages: [new HumanMessage(request!)] }, config)
}
const [held] = heldInterrupts(out)
console.log(held ? `Paused. ${held.text}` : String(out.messages.at(-1)!.content))
await interlock.close()
