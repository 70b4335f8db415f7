/**
 * A support agent on the AI SDK (generateText with tools) that refunds
 * Stripe charges and tells the support channel on Slack, each through
 * Interlock.
 *
 *   node refund-agent.ts <chat id> "<what the customer asks>"
 *   node refund-agent.ts <chat id>          resume it (after a crash, or once a hold is released)
 *
 * The chat is saved in chats/<id>.json before every step.
 * - Crash while a tool ran: run it again. Interlock finishes what was in
 *   flight (the refund re-sent with the same Idempotency-Key, Stripe keeps
 *   one; a Slack post nobody can look up is AMBIGUOUS, never posted twice);
 *   the model, asked again, makes the same call, and it finds its effect.
 * - Held by a policy rule: the run stops on the SDK's tool approval request,
 *   whose reason is the release command; run it again once an operator has
 *   released it, and the approved call runs by its saved toolCallId.
 * - A decision whose premises changed: the model gets the rejection as an
 *   error result and nothing is sent.
 *
 * Configuration: interlock.toml beside this file (or $INTERLOCK_CONFIG) and
 * its variables. The model: $AI_MODEL (default anthropic/claude-sonnet-4.5),
 * resolved by the AI SDK's default provider (the AI Gateway with
 * AI_GATEWAY_API_KEY, or globalThis.AI_SDK_DEFAULT_PROVIDER).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai'
import { openInterlock } from 'agent-interlock'
import { gatedTool, interlockApproval, resumeApprovals } from 'agent-interlock/ai-sdk'
import { z } from 'zod'

const [chat, request] = process.argv.slice(2)
if (!chat) throw new Error('usage: node refund-agent.ts <chat id> ["<request>"]')

const interlock = await openInterlock({ configPath: process.env.INTERLOCK_CONFIG ?? new URL('./interlock.toml', import.meta.url).pathname })
const gate = { interlock, thread: chat }

const tools = {
  refund: gatedTool(
    tool({
      description: 'Refund part or all of a Stripe charge.',
      inputSchema: z.object({ charge: z.string(), amount: z.string().describe('decimal, e.g. "12.50"'), currency: z.string() }),
    }),
    { ...gate, target: 'stripe', action: 'refund' },
  ),
  tell_support: gatedTool(tool({ description: 'Post a message to the support team on Slack.', inputSchema: z.object({ text: z.string() }) }), {
    ...gate,
    name: 'tell_support',
    target: 'slack',
    action: 'post',
    args: (input) => ({ channel: process.env.SUPPORT_CHANNEL ?? 'C0SUPPORT', text: input.text }),
  }),
}

mkdirSync('chats', { recursive: true })
const file = `chats/${chat}.json`
const save = (messages: ModelMessage[]) => writeFileSync(file, JSON.stringify(messages, null, 2))
let saved: ModelMessage[] = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : []
if (request) saved = [...saved, { role: 'user', content: request }]

// Approvals Interlock asked for: answered once operators have released the calls; still held, the chat waits.
const { messages, held } = await resumeApprovals(saved, tools)
if (held.length > 0) {
  for (const h of held) console.log(h.reason)
  await interlock.close()
  process.exit(0)
}
save(messages)

const result = await generateText({
  model: process.env.AI_MODEL ?? 'anthropic/claude-sonnet-4.5',
  tools,
  toolApproval: interlockApproval(tools),
  messages,
  stopWhen: stepCountIs(8),
  prepareStep: ({ responseMessages }) => {
    save([...messages, ...responseMessages])
    return undefined
  },
})
save([...messages, ...result.responseMessages])
for (const part of result.content) if (part.type === 'tool-approval-request') console.log(part.reason)
if (result.text) console.log(result.text)
await interlock.close()
