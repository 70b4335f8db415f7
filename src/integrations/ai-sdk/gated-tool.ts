/**
 * An AI SDK tool (`tool({ ... })`) whose effect goes through Interlock: the
 * target named in interlock.toml makes it, once. `execute` returns what came
 * of it ({ state, text, effectId, receipt }), and `toModelOutput` gives the
 * model the text, as an error (`error-text`) for every outcome but
 * COMMITTED: HELD, REJECTED, FAILED, AMBIGUOUS, in flight, REFUSED.
 *
 * Which effect a call is. The AI SDK keeps no state: the app keeps the
 * messages, saved after each step, so a crash while a tool runs loses that
 * step and the model, asked again, mints a new toolCallId. So:
 * - a call whose toolCallId is already in the messages (an approval request
 *   the app saved: the call runs after the approval response, by the same
 *   id, also after a crash) is named by that id;
 * - any other call is named by what it is (thread, tool, input), counted in
 *   the conversation: identical calls the messages show done are not this
 *   one, so a repeat the model makes after seeing the first result is a new
 *   effect, while a call re-made after a crash (its result never saved) is
 *   the same effect, whatever the time since. Identical calls in one step
 *   are one effect.
 */
import type { ModelMessage, Tool, ToolExecutionOptions } from 'ai'
import { canonicalJson, type JsonObject } from '../../core/canonical-json.js'
import type { Receipt } from '../../core/effect.js'
import { runToolCall, type CallOptions, type GatedCallOptions, type ToolCall } from '../agent/tool-call.js'
import { threadName } from '../agent/thread-name.js'

/** What the tool returns: JSON, kept in the app's messages and UI. */
export interface GatedOutput {
  /** COMMITTED, HELD, REJECTED, FAILED, AMBIGUOUS, REFUSED, or the in-flight state. */
  state: string
  /** What the model is told (words.ts). */
  text: string
  effectId?: string
  /** COMMITTED: what the service answered. */
  receipt?: Receipt
}

/** What a thread function may look at: the call's id, the messages, the tool's context (toolsContext). */
export interface CallContext {
  toolCallId: string
  messages: ModelMessage[]
  context: unknown
}

export interface GateOptions<Input = unknown> extends GatedCallOptions<Input> {
  /** The tool's name, its key in the tools record (default: the action): its earlier calls in the messages are found by it. */
  name?: string
  /** The app's id for the chat: its effects are journaled in thread `ai-sdk/<id>`. A function to take it from the call (the tool's context). */
  thread: string | ((call: CallContext) => string)
}

const gated = new WeakMap<object, GateOptions<any>>()

/** The tool with `execute` and `toModelOutput` through Interlock; its description, schemas and the rest stay. */
export function gatedTool<Input, Context>(tool: Tool<Input, any, Context>, options: GateOptions<Input>): Tool<Input, GatedOutput, Context> {
  const wrapped = {
    ...tool,
    execute: async (input: Input, call: ToolExecutionOptions<Context>): Promise<GatedOutput> => {
      const answer = await runToolCall(options.interlock, toolCallOf(options, input, call, 'execute'), callOptions(options))
      return { state: answer.state, text: answer.text, ...(answer.effectId ? { effectId: answer.effectId } : {}), ...(answer.receipt ? { receipt: answer.receipt } : {}) }
    },
    toModelOutput: ({ output }: { output: GatedOutput }): { type: 'text' | 'error-text'; value: string } => (output.state === 'COMMITTED' ? { type: 'text', value: output.text } : { type: 'error-text', value: output.text }),
  } as Tool<Input, GatedOutput, Context>
  gated.set(wrapped, options)
  return wrapped
}

export function gatingOf(tool: unknown): GateOptions | undefined {
  return typeof tool === 'object' && tool !== null ? gated.get(tool) : undefined
}

/**
 * The Interlock call for one tool call. `when`: 'approval' asks before the
 * SDK decides whether to pause; a call that pauses is saved with its id, so
 * it is named by the id there.
 */
export function toolCallOf<Input>(options: GateOptions<Input>, input: Input, call: CallContext | (Omit<ToolExecutionOptions<unknown>, 'context'> & { context?: unknown }), when: 'execute' | 'approval'): ToolCall {
  const args = options.args ? options.args(input) : (input as JsonObject)
  const context: CallContext = { toolCallId: call.toolCallId, messages: call.messages, context: call.context }
  const base = { thread: threadOf(options, context), target: options.target, action: options.action, args, tool: nameOf(options), premises: options.premises, result: options.result }
  // By its id, a repeat of the call (a new id, not in the messages) is named by its content: another effect.
  if (when === 'approval' || callIn(call.messages, call.toolCallId)) return { ...base, callId: call.toolCallId, againIsNew: true }
  return { ...base, seen: shownDone(call.messages, args, options) }
}

export function threadOf(options: Pick<GateOptions, 'thread'>, call: CallContext): string {
  return threadName('ai-sdk', typeof options.thread === 'function' ? options.thread(call) : options.thread)
}

export function nameOf(o: Pick<GateOptions, 'name' | 'action'>): string {
  return o.name ?? o.action
}

export function callOptions(o: CallOptions): CallOptions {
  return { mode: o.mode, waitMs: o.waitMs, log: o.log, now: o.now }
}

/** Whether the messages already hold this call (an assistant's tool-call part with its id). */
function callIn(messages: readonly ModelMessage[], toolCallId: string): boolean {
  return messages.some((m) => m.role === 'assistant' && Array.isArray(m.content) && m.content.some((p) => p.type === 'tool-call' && p.toolCallId === toolCallId))
}

/** Identical calls (this tool, the same arguments) whose result the messages show done (not an error). */
function shownDone(messages: readonly ModelMessage[], args: JsonObject, options: GateOptions<any>): number {
  const same = canonicalJson(args)
  const name = nameOf(options)
  const done = new Set<string>()
  for (const m of messages) {
    if (m.role !== 'tool' || !Array.isArray(m.content)) continue
    for (const p of m.content) if (p.type === 'tool-result' && !['error-text', 'error-json', 'execution-denied'].includes(p.output.type)) done.add(p.toolCallId)
  }
  let n = 0
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue
    for (const p of m.content) {
      if (p.type !== 'tool-call' || p.toolName !== name || !done.has(p.toolCallId)) continue
      try {
        if (canonicalJson(options.args ? options.args(p.input) : (p.input as JsonObject)) === same) n++
      } catch {
        // an input this tool cannot take is not this call
      }
    }
  }
  return n
}
