/**
 * An Anthropic SDK runnable tool (betaZodTool, betaTool) whose effect goes
 * through Interlock: the target named in interlock.toml makes it, once, and
 * the tool_result says honestly what came of it. COMMITTED is the tool's
 * result; HELD, REJECTED, FAILED, AMBIGUOUS, in flight and REFUSED are
 * thrown as a ToolError, which the tool runner sends as `is_error: true`
 * with exactly that text (words.ts).
 *
 * Which effect: the tool_use id (`toolu_…`), the same id the same effect.
 * The id survives a crash only in the app's persisted messages, so the app
 * saves each reply before its tools run and answers a reply left unanswered
 * with resumeToolUses() (resume.ts); a new runner would ask the model again,
 * and a new id is a new effect.
 */
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError'
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool'
import type { JsonObject } from '../../core/canonical-json.js'
import { runToolCall, type GatedCallOptions, type ToolAnswer, type ToolCall } from '../agent/tool-call.js'
import { threadName } from '../agent/thread-name.js'

/** A tool_use block as the Messages API sends it (beta or not). */
export interface ToolUseLike {
  id: string
  name: string
  input: unknown
}

/** A tool_result block answering one tool_use: assignable to the beta and non-beta param types. */
export interface ToolResultBlock {
  type: 'tool_result'
  tool_use_id: string
  content: string
  is_error?: true
}

export interface GateOptions<Input = unknown> extends GatedCallOptions<Input> {
  /**
   * The app's id for the conversation (a chat id, a ticket): its effects are
   * journaled in thread `anthropic/<id>`. A function when one tool serves
   * several conversations.
   */
  thread: string | ((toolUse: ToolUseLike) => string)
}

const gated = new WeakMap<object, GateOptions<any>>()

/**
 * The tool with `run` replaced by a call through Interlock; its name,
 * description, schema and input parsing stay. The original `run` is not
 * called: the target makes the effect.
 */
export function gatedTool<Input>(tool: BetaRunnableTool<Input>, options: GateOptions<Input>): BetaRunnableTool<Input> {
  const wrapped: BetaRunnableTool<Input> = {
    ...tool,
    run: async (input, context) => {
      // Without the runner's context there is no tool_use id: the call's content names the effect.
      const answer = await answerToolUse(options, context?.toolUse ?? { id: '', name: tool.name, input }, input, context?.toolUse !== undefined)
      if (answer.isError) throw new ToolError(answer.text)
      return answer.text
    },
  }
  gated.set(wrapped, options)
  return wrapped
}

/** How a tool was gated, or undefined for a tool that is not. */
export function gatingOf(tool: object): GateOptions | undefined {
  return gated.get(tool)
}

/**
 * For a hand-written loop (`client.messages.create` and your own dispatch):
 * the tool_result for one tool_use, its effect made through Interlock.
 * `is_error` for every outcome but COMMITTED.
 */
export async function gatedToolResult(toolUse: ToolUseLike, options: GateOptions): Promise<ToolResultBlock> {
  return resultBlock(toolUse.id, await answerToolUse(options, toolUse, toolUse.input, true))
}

export function resultBlock(toolUseId: string, answer: Pick<ToolAnswer, 'text' | 'isError'>): ToolResultBlock {
  return answer.isError ? { type: 'tool_result', tool_use_id: toolUseId, content: answer.text, is_error: true } : { type: 'tool_result', tool_use_id: toolUseId, content: answer.text }
}

export function toolCallOf<Input>(options: GateOptions<Input>, toolUse: ToolUseLike, input: unknown, byId: boolean): ToolCall {
  const args = options.args ? options.args(input as Input) : (input as JsonObject)
  return {
    thread: threadOf(options, toolUse),
    target: options.target,
    action: options.action,
    args,
    tool: toolUse.name,
    // The tool_use id alone names the effect: the model calling again makes a new one.
    ...(byId ? { callId: toolUse.id, againIsNew: true } : {}),
    premises: options.premises,
    result: options.result,
  }
}

export function threadOf(options: Pick<GateOptions, 'thread'>, toolUse: ToolUseLike): string {
  return threadName('anthropic', typeof options.thread === 'function' ? options.thread(toolUse) : options.thread)
}

async function answerToolUse<Input>(options: GateOptions<Input>, toolUse: ToolUseLike, input: unknown, byId: boolean): Promise<ToolAnswer> {
  const { interlock, mode, waitMs, log, now } = options
  return runToolCall(interlock, toolCallOf(options, toolUse, input, byId), { mode, waitMs, log, now })
}
