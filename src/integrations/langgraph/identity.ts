/**
 * Which effect a LangGraph tool call is.
 *
 * - 'call-id': its `tool_call_id`. A run resumed from its checkpoint sends the
 *   interrupted call again with the same id, so it finds its effect; a second
 *   call the model makes has a new id and is a new effect, even with the same
 *   arguments (refund 5, then refund 5 again on purpose). That holds when the
 *   model's message was checkpointed before the tool ran: durability "sync",
 *   and "async" once its write has landed (SQLite writes it before the tool
 *   node's first I/O; a remote checkpointer may still be writing it).
 * - 'content': the thread, tool and arguments (agent/occurrence.ts): what a
 *   run with durability "exit" needs, since nothing of it is saved before a
 *   crash and the resumed run asks the model again, which mints new ids for
 *   the same calls. The price: an identical call within the dedupe window is
 *   taken for a retry, so a repeat on purpose needs an argument that differs.
 * - 'auto' (default): 'content' under durability "exit", else 'call-id'.
 *
 * By call id, a call identical to one the model was told is still pending
 * (HELD, in flight, AMBIGUOUS: the words say "call this tool again with the
 * same arguments") joins that call's effect instead of making a new one: the
 * conversation in the graph state says which call that was
 * (`artifact.interlock` of its ToolMessage).
 */
import type { ToolRuntime } from '@langchain/core/tools'
import type { JsonObject } from '../../core/canonical-json.js'
import { effectId } from '../../core/effect.js'
import { callKey } from '../agent/thread-name.js'

export type Identity = 'auto' | 'call-id' | 'content'

interface Call {
  thread: string
  target: string
  action: string
  args: JsonObject
  tool: string
}

/** Words that leave the call open for the model: it was told to call again, or that nobody knows yet. */
const OPEN = new Set(['HELD', 'PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'AMBIGUOUS'])

/** The call id to key the effect by, or undefined to name it by its content. */
export function callIdFor(identity: Identity, runtime: ToolRuntime, call: Call): string | undefined {
  const durability = (runtime as { durability?: string }).durability
  if (identity === 'content' || (identity === 'auto' && durability === 'exit') || !runtime.toolCallId) return undefined
  return openCallId(runtime.state, call) ?? runtime.toolCallId
}

/** The latest earlier call of this tool with these arguments, when what it was told leaves it open. */
function openCallId(state: unknown, call: Call): string | undefined {
  const messages = Array.isArray(state) ? state : (state as { messages?: unknown } | null)?.messages
  if (!Array.isArray(messages)) return undefined
  for (let i = messages.length - 1; i >= 0; i--) {
    const said = effectOf(messages[i], call.tool)
    if (!said) continue
    const same = effectId({ thread: call.thread, target: call.target, action: call.action, args: call.args, key: callKey(said.callId) }) === said.effectId
    if (same) return OPEN.has(said.state) ? said.callId : undefined
  }
  return undefined
}

function effectOf(m: unknown, tool: string): { effectId: string; state: string; callId: string } | undefined {
  const msg = m as { name?: unknown; artifact?: { interlock?: { effectId?: unknown; state?: unknown; callId?: unknown } }; getType?: () => string }
  if (typeof msg?.getType !== 'function' || msg.getType() !== 'tool' || msg.name !== tool) return undefined
  const said = msg.artifact?.interlock
  if (typeof said?.effectId !== 'string' || typeof said.state !== 'string' || typeof said.callId !== 'string') return undefined
  return { effectId: said.effectId, state: said.state, callId: said.callId }
}
