/**
 * The model of this example: a stand-in that decides as a model would, from
 * the conversation alone, so the example runs without an API key or network
 * (with OPENAI_API_KEY set, refund-agent.ts uses a real model instead). Each
 * answer mints fresh call ids, as a real model does: a turn asked again after
 * a resume gets new ones.
 *
 * "Refund 40.00 USD on ch_123, then tell C0REFUNDS": look up nothing, refund,
 * then post to the channel, then say what happened.
 */
import { randomUUID } from 'node:crypto'
import type { AgentInputItem } from '@openai/agents'
import { ScriptedModel, assistantMessage, functionCall, modelResponder } from '@openai/agents/testing'

const REQUEST = /Refund (\d+\.\d{2}) ([A-Z]{3}) on (ch_\w+)(?:, then tell (C\w+))?/

export function scriptedRefundModel(turns = 8): ScriptedModel {
  return new ScriptedModel(Array.from({ length: turns }, () => modelResponder(({ request }) => decide(request.input as AgentInputItem[]))))
}

function decide(input: string | AgentInputItem[]) {
  const items = typeof input === 'string' ? [{ type: 'message', role: 'user', content: input } as AgentInputItem] : input
  const asked = items.map(textOf).find((t) => REQUEST.test(t))
  const m = asked ? REQUEST.exec(asked) : null
  if (!m) return [assistantMessage('I can only refund a charge: "Refund 40.00 USD on ch_123, then tell C0REFUNDS".')]
  const [, amount, currency, charge, channel] = m
  const results = new Map(items.flatMap((i) => (i.type === 'function_call_result' ? [[i.name, outputOf(i)] as const] : [])))
  const call = (name: string, args: Record<string, string>) => [functionCall(name, args, { callId: `call_${randomUUID().replaceAll('-', '')}` })]
  const refunded = results.get('refund')
  if (refunded === undefined) return call('refund', { charge: charge!, amount: amount!, currency: currency!.toLowerCase() })
  const done = /^(Done|Already done)|"status":"succeeded"/.test(refunded)
  if (channel && done && !results.has('notify')) return call('notify', { channel, text: `Refunded ${amount} ${currency} on ${charge}.` })
  return [assistantMessage([...results].map(([name, text]) => `${name}: ${text}`).join('\n'))]
}

function textOf(item: AgentInputItem): string {
  if (item.type !== 'message' || item.role !== 'user') return ''
  return typeof item.content === 'string' ? item.content : item.content.map((c) => ('text' in c ? c.text : '')).join('')
}

function outputOf(item: AgentInputItem & { type: 'function_call_result' }): string {
  const o = item.output as string | { type: string; text?: string }
  return typeof o === 'string' ? o : (o.text ?? JSON.stringify(o))
}
