/**
 * A LangGraph tool whose side effect goes through Interlock: the same name,
 * description and schema as the tool it replaces, so the model and the
 * graph (ToolNode, createReactAgent, a node of your own calling
 * `tool.invoke(toolCall, config)`) see no difference, and a body that is
 * `runToolCall` on a target instead of the call the tool made itself.
 *
 * - thread: the run's `configurable.thread_id` (threadName('langgraph', id));
 * - which effect: the `tool_call_id`, which names the same call again when a
 *   run resumes from its checkpoint (durability "sync" or "async": the model's
 *   message was saved before the tool node ran). With durability "exit"
 *   nothing is saved before the run ends, a crashed run starts over from its
 *   input and the model mints new ids for the same calls: there the call's
 *   content names it (identity.ts);
 * - premises: a mapping from the arguments and the graph state the node read
 *   (what the model decided on), or 'capture' to have the target read them;
 * - the answer: a ToolMessage with the shared words, status "error" for any
 *   outcome but COMMITTED, and the effect in its artifact
 *   (`artifact.interlock`);
 * - HELD: reported to the model (onHeld 'report', the default), or the run
 *   paused with LangGraph's `interrupt()` until an operator releases it and
 *   the app resumes the thread (onHeld 'interrupt', held.ts).
 */
import { ToolMessage } from '@langchain/core/messages'
import { tool, type DynamicStructuredTool, type StructuredToolInterface, type ToolRuntime } from '@langchain/core/tools'
import type { JsonObject } from '../../core/canonical-json.js'
import type { Premises, Receipt } from '../../core/effect.js'
import type { Interlock } from '../../core/interlock.js'
import { runToolCall, type CallOptions, type ToolAnswer } from '../agent/tool-call.js'
import type { Dedupe } from '../agent/occurrence.js'
import { pauseWhileHeld } from './held.js'
import { callIdFor, type Identity } from './identity.js'
import { interlockThread } from './thread.js'

export interface GatedToolOptions<S = Record<string, unknown>> {
  /** The Interlock target (a name under [targets] in interlock.toml) that carries the effect. */
  target: string
  /** The target's action (default: the tool's name). */
  action?: string
  /** The target's arguments from the tool's input (default: the input as it is). */
  args?: (input: Record<string, unknown>) => JsonObject
  /**
   * What the decision rests on, journaled with the effect and checked right
   * before it is sent: from the arguments and the graph state this tool node
   * read, or 'capture' to have the target read it when the tool runs.
   */
  premises?: ((args: JsonObject, state: S) => Premises | undefined | Promise<Premises | undefined>) | 'capture'
  /** A HELD effect: told to the model ('report', default) or the run paused with interrupt() ('interrupt'). */
  onHeld?: 'report' | 'interrupt'
  /** Which calls are one effect (identity.ts). Default 'auto': the tool_call_id, or the content under durability "exit". */
  identity?: Identity
  /** By content: how an identical call is told a retry from a repeat (default: a retry within 10 minutes of the first committing). */
  dedupe?: Dedupe
  /** What the model is shown of a COMMITTED effect (default: the receipt as JSON). */
  result?: (receipt: Receipt) => string
  /** inline (default): this process sends; outbox: relays send, and the tool waits up to `waitMs` for them. */
  mode?: CallOptions['mode']
  waitMs?: number
  log?: (line: string) => void
}

/** What the ToolMessage's `artifact.interlock` says of the effect, for the app and for the next call (identity.ts). */
export interface EffectArtifact {
  effectId?: string
  /** COMMITTED, HELD, REJECTED, AMBIGUOUS, FAILED, REFUSED, or the in-flight state. */
  state: string
  /** The call id the effect is keyed by (the tool_call_id, or an earlier one this call joined); absent when keyed by content. */
  callId?: string
  replayed: boolean
}

/** A tool declared with `tool(...)`, or the same three fields. */
export type ToolDeclaration = Pick<StructuredToolInterface, 'name' | 'description' | 'schema'>

export function gatedTool<S = Record<string, unknown>>(interlock: Interlock, declared: ToolDeclaration, options: GatedToolOptions<S>): DynamicStructuredTool {
  const name = declared.name
  const action = options.action ?? name
  const onHeld = options.onHeld ?? 'report'
  const callOptions: CallOptions = { mode: options.mode, waitMs: options.waitMs, log: options.log }

  const run = async (input: Record<string, unknown>, runtime: ToolRuntime): Promise<ToolMessage | string> => {
    const thread = interlockThread(runtime)
    const args = options.args ? options.args(input) : (input as JsonObject)
    const state = runtime.state as S
    const callId = callIdFor(options.identity ?? 'auto', runtime, { thread, target: options.target, action, args, tool: name })
    const premises = options.premises
    const call = {
      thread,
      target: options.target,
      action,
      args,
      tool: name,
      callId,
      dedupe: options.dedupe,
      result: options.result,
      premises: typeof premises === 'function' ? (a: JsonObject) => premises(a, state) : premises,
    }
    const once = () => runToolCall(interlock, call, callOptions)
    const answer = onHeld === 'interrupt' ? await pauseWhileHeld(once, { tool: name, target: options.target }) : await once()
    return toolMessage(answer, name, runtime.toolCallId, callId)
  }
  // tool()'s overloads are keyed on the schema's kind; the declared one is passed through as it is.
  return tool(run as never, { name, description: declared.description, schema: declared.schema as never }) as unknown as DynamicStructuredTool
}

function toolMessage(answer: ToolAnswer, name: string, toolCallId: string | undefined, callId: string | undefined): ToolMessage | string {
  const artifact: { interlock: EffectArtifact } = {
    interlock: { ...(answer.effectId ? { effectId: answer.effectId } : {}), state: answer.state, ...(callId !== undefined ? { callId } : {}), replayed: answer.replayed },
  }
  // Invoked without a tool call (tool.invoke(args)): LangGraph has no message to attach; the text is the result.
  if (!toolCallId) {
    if (answer.isError) throw new Error(answer.text)
    return answer.text
  }
  return new ToolMessage({ content: answer.text, tool_call_id: toolCallId, name, status: answer.isError ? 'error' : 'success', artifact })
}
