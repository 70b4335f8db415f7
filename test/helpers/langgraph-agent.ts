/**
 * A refund agent on the real LangGraph runtime, for the adapter's tests: a
 * scripted chat model (fakeModel() from @langchain/core/testing) that decides
 * from the conversation alone, so a resumed process decides the same; the
 * Stripe and SendGrid emulators behind the tools; and the two shapes a tool
 * node takes: the prebuilt ToolNode running every call of the model's message
 * as one task, or one Send (one task) per call.
 *
 * Every tool call gets a fresh random id, as a real model's does: a run that
 * asks the model again gets new ids for the same calls.
 */
import { randomUUID } from 'node:crypto'
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import type { RunnableConfig } from '@langchain/core/runnables'
import { fakeModel } from '@langchain/core/testing'
import { tool, type StructuredToolInterface, type ToolRuntime } from '@langchain/core/tools'
import { Annotation, Command, END, MessagesAnnotation, Send, START, StateGraph, type BaseCheckpointSaver } from '@langchain/langgraph'
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt'
import { z } from 'zod'
import { toMinorUnits } from '../../src/core/targets/stripe/money.js'

export interface ChargeSeen {
  id: string
  status: string
  amount: number
  amount_refunded: number
  disputed: boolean
  currency: string
}

/** The conversation, and the charges the agent read (what a refund decision rests on). */
export const AgentState = Annotation.Root({
  ...MessagesAnnotation.spec,
  charges: Annotation<Record<string, ChargeSeen>>({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
})
export type AgentStateType = typeof AgentState.State

export interface PlannedCall {
  name: string
  args: Record<string, unknown>
}

/**
 * The model. Given `turns`, its n-th decision (n = how many tool-calling
 * messages it sent before in this conversation) is `turns[n]`; given a
 * function, whatever that returns for the conversation. With nothing to
 * call, a final answer quoting what the tools said. `onDecide(n)` runs as it
 * decides (the world moving on meanwhile).
 */
export function scriptedModel(turns: PlannedCall[][] | ((messages: BaseMessage[]) => PlannedCall[] | undefined), onDecide?: (turn: number) => void) {
  const decide = (messages: BaseMessage[]): BaseMessage => {
    const turn = messages.filter((m) => m.getType() === 'ai' && ((m as AIMessage).tool_calls?.length ?? 0) > 0).length
    onDecide?.(turn)
    const calls = typeof turns === 'function' ? turns(messages) : turns[turn]
    if (calls && calls.length > 0) {
      return new AIMessage({ content: '', tool_calls: calls.map((c) => ({ name: c.name, args: c.args, id: `call_${randomUUID()}`, type: 'tool_call' as const })) })
    }
    const said = messages.filter((m): m is ToolMessage => m.getType() === 'tool').map((m) => `${m.name}: ${String(m.content).split('\n')[0]}`)
    return new AIMessage(`Finished.\n${said.join('\n')}`)
  }
  const model = fakeModel()
  for (let i = 0; i < 40; i++) model.respond(decide)
  return model
}

export const refundSchema = z.object({
  charge: z.string().describe('The Stripe charge id, ch_...'),
  amount: z.string().describe('The amount to refund, a decimal string such as "5.00"'),
  currency: z.string().describe('The charge currency, e.g. "usd"'),
})

/** The refund tool as an app declares it without Interlock: it calls Stripe itself. */
export function plainRefundTool(stripe: { url: string; apiKey: string }, afterRefund?: () => void) {
  return tool(
    async ({ charge, amount, currency }) => {
      const res = await fetch(`${stripe.url}/v1/refunds`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stripe.apiKey}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ charge, amount: String(toMinorUnits(amount, currency)) }).toString(),
      })
      const body = (await res.json()) as { id?: string; error?: { message: string } }
      afterRefund?.()
      if (!res.ok) throw new Error(body.error?.message ?? `Stripe answered ${res.status}`)
      return `Refunded: ${body.id}`
    },
    { name: 'refund', description: 'Refund part or all of a Stripe charge.', schema: refundSchema },
  )
}

export const emailSchema = z.object({
  to: z.string().describe('The customer\'s email address'),
  subject: z.string(),
  text: z.string(),
})

export const MAIL_FROM = 'billing@shop.example'

/** The email tool as an app declares it without Interlock: SendGrid's Mail Send, called directly. */
export function plainEmailTool(sendgrid: { url: string; apiKey: string }, afterSend?: () => void) {
  return tool(
    async ({ to, subject, text }) => {
      const res = await fetch(`${sendgrid.url}/v3/mail/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sendgrid.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ personalizations: [{ to: [{ email: to }] }], from: { email: MAIL_FROM }, subject, content: [{ type: 'text/plain', value: text }] }),
      })
      afterSend?.()
      if (res.status !== 202) throw new Error(`SendGrid answered ${res.status}`)
      return 'Sent.'
    },
    { name: 'email_customer', description: 'Email the customer.', schema: emailSchema },
  )
}

/** A read: the charge as Stripe has it now, kept in the graph state for the decision that follows. */
export function lookupChargeTool(stripe: { url: string; apiKey: string }) {
  return tool(
    async ({ charge }, runtime: ToolRuntime) => {
      const res = await fetch(`${stripe.url}/v1/charges/${encodeURIComponent(charge)}`, { headers: { authorization: `Bearer ${stripe.apiKey}` } })
      const c = (await res.json()) as ChargeSeen
      const seen: ChargeSeen = { id: c.id, status: c.status, amount: c.amount, amount_refunded: c.amount_refunded, disputed: c.disputed, currency: c.currency }
      return new Command({ update: { charges: { [charge]: seen }, messages: [new ToolMessage({ content: JSON.stringify(seen), tool_call_id: runtime.toolCallId, name: 'lookup_charge' })] } })
    },
    { name: 'lookup_charge', description: 'Read a Stripe charge.', schema: z.object({ charge: z.string() }) },
  )
}

export type Shape = 'toolnode' | 'send'

export interface AgentOptions {
  model: ReturnType<typeof scriptedModel>
  tools: StructuredToolInterface[]
  shape: Shape
  /** None: a graph that cannot resume (and has no thread_id). */
  checkpointer?: BaseCheckpointSaver
  /** Send shape: runs around each call's task (to order the calls of one message). */
  around?: (call: { id?: string; args: Record<string, unknown> }, run: () => Promise<unknown>) => Promise<unknown>
}

export function refundAgent(o: AgentOptions) {
  const bound = o.model.bindTools(o.tools)
  const agent = async (state: AgentStateType) => ({ messages: [await bound.invoke(state.messages)] })
  const toolNode = new ToolNode(o.tools)
  const g = new StateGraph(AgentState).addNode('agent', agent)
  if (o.shape === 'toolnode') {
    return g.addNode('tools', toolNode).addEdge(START, 'agent').addConditionalEdges('agent', toolsCondition, ['tools', END]).addEdge('tools', 'agent').compile({ checkpointer: o.checkpointer })
  }
  type SendInput = AgentStateType & { lg_tool_call: { id?: string; args: Record<string, unknown> } }
  const perCall = async (input: SendInput, config: RunnableConfig) => {
    const run = () => toolNode.invoke(input, config)
    return o.around ? o.around(input.lg_tool_call, run) : run()
  }
  const route = (state: AgentStateType) => {
    const last = state.messages[state.messages.length - 1] as AIMessage
    const calls = last.tool_calls ?? []
    return calls.length === 0 ? END : calls.map((c) => new Send('tools', { ...state, lg_tool_call: c }))
  }
  return g
    .addNode('tools', perCall as never)
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', route, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer: o.checkpointer })
}

/** The messages of a result, as plain data (for a child's stdout and for assertions). */
export function transcript(messages: BaseMessage[]): { type: string; name?: string; content: string; status?: string; toolCallId?: string; interlock?: Record<string, unknown> }[] {
  return messages.map((m) => {
    const t = m as ToolMessage
    const artifact = (t.artifact as { interlock?: Record<string, unknown> } | undefined)?.interlock
    return {
      type: m.getType(),
      ...(m.name ? { name: m.name } : {}),
      content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
      ...(t.status ? { status: t.status } : {}),
      ...(m.getType() === 'tool' ? { toolCallId: t.tool_call_id } : {}),
      ...(artifact ? { interlock: artifact } : {}),
    }
  })
}
