/**
 * Resuming a conversation from the app's persisted messages. The SDK keeps
 * nothing, and a new tool runner always asks the model first: a history
 * that ends in an assistant reply whose tool_use blocks were never answered
 * (the process died while its tools ran, or the app paused on a hold) would
 * be asked again, and the model would mint new tool_use ids, new effects.
 * resumeToolUses answers that reply itself, by the same ids, before a new
 * runner starts:
 *
 * 1. each tool_use is run again: a gated tool finds its effect in the
 *    journal and carries it on by its tier if a crash left it in flight
 *    (tier 1 re-sent with its key, tier 2 asked, tier 3 AMBIGUOUS), never
 *    sending it twice; any other tool simply runs, as the runner would have
 *    run it;
 * 2. Interlock recovers the rest of the conversation's thread
 *    (recoverThread): effects in flight that no pending call names;
 * 3. the tool_result message is appended, and the app starts its runner.
 *
 * heldToolUses is the pause: asked in the runner's loop body, before the
 * reply's tools run, it journals a call a policy rule holds as HELD (nothing
 * sent) and says so; the app saves the messages and stops. Once operators
 * release it, resumeToolUses runs that same call, which goes through.
 */
import { runRunnableTool, type BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool'
import type { BetaMessageParam, BetaToolResultBlockParam, BetaToolUseBlock } from '@anthropic-ai/sdk/resources/beta/messages/messages'
import { holdBeforeRun } from '../agent/hold.js'
import { recoverThread } from '../agent/resume.js'
import { gatingOf, resultBlock, threadOf, toolCallOf, type ToolUseLike } from './gated-tool.js'

/** A message as the Messages API takes it: content a string or blocks. */
export interface MessageLike {
  role: string
  content?: string | readonly { type: string }[]
}

export interface HeldToolUse {
  toolUse: ToolUseLike
  effectId: string
  /** Who must release it and how (the words a model would be told). */
  text: string
}

export interface Resumed<M> {
  /** The history to start the runner with: the pending reply answered, or as it was (nothing pending, or still held). */
  messages: (M | BetaMessageParam)[]
  /** Calls of the pending reply that operators still hold: nothing was answered, the conversation stays paused. */
  held: HeldToolUse[]
}

/** The reply's calls that a policy rule holds, each journaled HELD (nothing sent); empty when none is. */
export async function heldToolUses(message: MessageLike | undefined, tools: readonly BetaRunnableTool<any>[]): Promise<HeldToolUse[]> {
  const held: HeldToolUse[] = []
  for (const toolUse of toolUsesOf(message)) {
    const tool = tools.find((t) => t.name === toolUse.name)
    const gating = tool && gatingOf(tool)
    if (!gating) continue
    let input: unknown
    try {
      input = tool.parse ? tool.parse(toolUse.input) : toolUse.input
    } catch {
      continue // the runner answers bad input with the parse error, and nothing is sent
    }
    const { interlock, mode, waitMs, log, now } = gating
    const check = await holdBeforeRun(interlock, toolCallOf(gating, toolUse, input, true), { mode, waitMs, log, now })
    if (check.held) held.push({ toolUse, effectId: check.effectId!, text: check.answer!.text })
  }
  return held
}

/** Recovers the threads of the gated tools, then answers a trailing reply's tool_use blocks by their ids (see above). */
export async function resumeToolUses<M extends MessageLike>(messages: readonly M[], tools: readonly BetaRunnableTool<any>[]): Promise<Resumed<M>> {
  const pending = pendingReply(messages)
  const toolUses = toolUsesOf(pending)
  const held = await heldToolUses(pending, tools)
  // The pending calls first: each carries its own effect on, and tells whether this call made it.
  const answered = held.length === 0 && toolUses.length > 0 ? await answer(toolUses, tools) : undefined
  await recoverThreads(tools, toolUses)
  return answered ? { messages: [...messages, { role: 'user', content: answered }], held } : { messages: [...messages], held }
}

async function answer(toolUses: ToolUseLike[], tools: readonly BetaRunnableTool<any>[]): Promise<BetaToolResultBlockParam[]> {
  return Promise.all(
    toolUses.map(async (toolUse): Promise<BetaToolResultBlockParam> => {
      const tool = tools.find((t) => t.name === toolUse.name)
      if (!tool) return resultBlock(toolUse.id, { text: `Error: Tool '${toolUse.name}' not found`, isError: true })
      const block = { type: 'tool_use', id: toolUse.id, name: toolUse.name, input: toolUse.input } as BetaToolUseBlock
      const outcome = await runRunnableTool(tool, toolUse.input, { toolUse: block, toolUseBlock: block })
      return { type: 'tool_result', tool_use_id: toolUse.id, content: outcome.content, ...(outcome.isError ? { is_error: true } : {}) }
    }),
  )
}

/** recoverThread for each thread the gated tools journal to (for a thread chosen per call: the pending calls'). */
async function recoverThreads(tools: readonly BetaRunnableTool<any>[], toolUses: ToolUseLike[]): Promise<void> {
  const done = new Set<string>()
  for (const tool of tools) {
    const gating = gatingOf(tool)
    if (!gating) continue
    const threads = typeof gating.thread === 'string' ? [threadOf(gating, { id: '', name: tool.name, input: {} })] : toolUses.filter((u) => u.name === tool.name).map((u) => threadOf(gating, u))
    for (const thread of threads) {
      if (done.has(thread)) continue
      done.add(thread)
      await recoverThread(gating.interlock, thread, gating.mode)
    }
  }
}

/** The last message, when it is an assistant reply with tool_use blocks nobody answered. */
function pendingReply<M extends MessageLike>(messages: readonly M[]): M | undefined {
  const last = messages.at(-1)
  return last?.role === 'assistant' && toolUsesOf(last).length > 0 ? last : undefined
}

function toolUsesOf(message: MessageLike | undefined): ToolUseLike[] {
  if (!message || !Array.isArray(message.content)) return []
  return (message.content as readonly { type: string }[]).filter((b): b is ToolUseLike & { type: 'tool_use' } => b.type === 'tool_use')
}
