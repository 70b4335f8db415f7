/**
 * A support agent on the Anthropic SDK's tool runner that refunds Stripe
 * charges and tells the support channel on Slack, each through Interlock.
 *
 *   node refund-agent.ts <conversation id> "<what the customer asks>"
 *   node refund-agent.ts <conversation id>          resume it (after a crash, or once a hold is released)
 *
 * The conversation is saved in conversations/<id>.json after every reply,
 * before that reply's tools run: its tool_use ids are what name the effects.
 * - Crash while a tool ran: run it again; Interlock finishes what was in
 *   flight (the refund re-sent with the same Idempotency-Key, Stripe keeps
 *   one; a Slack post nobody can look up is AMBIGUOUS, never posted twice),
 *   and the saved tool_use is answered from the journal.
 * - Held by a policy rule: the run stops before anything is sent and prints
 *   the release command; run it again once an operator has released it.
 * - A decision whose premises changed (the charge disputed): the model gets
 *   the rejection as an error result and nothing is sent.
 *
 * Configuration: interlock.toml beside this file (or $INTERLOCK_CONFIG) and
 * its variables; ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL, read by the SDK).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import Anthropic from '@anthropic-ai/sdk'
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod'
import type { BetaMessageParam } from '@anthropic-ai/sdk/resources/beta/messages/messages'
import { openInterlock } from 'agent-interlock'
import { gatedTool, heldToolUses, resumeToolUses } from 'agent-interlock/anthropic'
import { z } from 'zod'

const [conversation, request] = process.argv.slice(2)
if (!conversation) throw new Error('usage: node refund-agent.ts <conversation id> ["<request>"]')

const interlock = await openInterlock({ configPath: process.env.INTERLOCK_CONFIG ?? new URL('./interlock.toml', import.meta.url).pathname })
const gate = { interlock, thread: conversation }

const tools = [
  gatedTool(
    betaZodTool({
      name: 'refund',
      description: 'Refund part or all of a Stripe charge.',
      inputSchema: z.object({ charge: z.string(), amount: z.string().describe('decimal, e.g. "12.50"'), currency: z.string() }),
      run: () => '', // not called: the stripe target in interlock.toml makes the refund
    }),
    { ...gate, target: 'stripe', action: 'refund' },
  ),
  gatedTool(
    betaZodTool({
      name: 'tell_support',
      description: 'Post a message to the support team on Slack.',
      inputSchema: z.object({ text: z.string() }),
      run: () => '',
    }),
    { ...gate, target: 'slack', action: 'post', args: (input) => ({ channel: process.env.SUPPORT_CHANNEL ?? 'C0SUPPORT', text: input.text }) },
  ),
]

mkdirSync('conversations', { recursive: true })
const file = `conversations/${conversation}.json`
const save = (messages: BetaMessageParam[]) => writeFileSync(file, JSON.stringify(messages, null, 2))
let saved: BetaMessageParam[] = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : []
if (request) saved = [...saved, { role: 'user', content: request }]

// A reply left unanswered (a crash, a hold): answered by its own tool_use ids before the model is asked again.
const { messages, held } = await resumeToolUses(saved, tools)
if (held.length > 0) {
  for (const h of held) console.log(h.text)
  await interlock.close()
  process.exit(0)
}
save(messages)

const runner = new Anthropic().beta.messages.toolRunner({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages, tools })
let answer = ''
for await (const reply of runner) {
  save([...runner.params.messages, { role: 'assistant', content: reply.content }])
  const holds = await heldToolUses(reply, tools)
  if (holds.length > 0) {
    for (const h of holds) console.log(h.text)
    break // paused: nothing was sent; run again once it is released
  }
  answer = reply.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n')
}
if (answer) console.log(answer)
await interlock.close()
