/**
 * Resuming a chat from the app's saved messages. The AI SDK keeps nothing;
 * a run that stopped on Interlock's approval request (a hold), or died while
 * a tool ran, goes on from the messages the app saved.
 *
 * resumeApprovals, before the next generateText:
 * 1. each approval request Interlock raised (its effect journaled under the
 *    call's toolCallId) that has no response yet: still HELD → the chat
 *    stays paused (`held`, nothing added); released, or settled otherwise
 *    (denied by operators, ...) → an approval response is added, so the SDK
 *    runs that call by its saved toolCallId and `execute` carries the effect
 *    on (and tells the model it made it now);
 * 2. Interlock recovers the rest of the gated tools' threads: what a crash
 *    left in flight is finished by tier: tier 1 re-sent with its key, tier 2
 *    asked, tier 3 AMBIGUOUS. An approved call that died in its `execute`
 *    is among them; run again, it finds its effect's outcome.
 * Approval requests the app raised for its own reasons are left to the app.
 */
import type { ModelMessage, Tool } from 'ai'
import { recoverThread } from '../agent/resume.js'
import { identify } from '../agent/tool-call.js'
import { gatingOf, threadOf, toolCallOf } from './gated-tool.js'

export interface HeldCall {
  toolCallId: string
  toolName: string
  effectId: string
  /** Who must release it and how (the approval request's reason). */
  reason: string
}

export interface ResumedChat {
  /** The messages to run with: approval responses added for released calls, or as they were. */
  messages: ModelMessage[]
  /** Calls Interlock still holds: nothing was added, the chat stays paused. */
  held: HeldCall[]
}

export async function resumeApprovals(messages: readonly ModelMessage[], tools: Record<string, Tool<any, any, any>>): Promise<ResumedChat> {
  const calls = new Map<string, { toolName: string; input: unknown }>()
  const requests: { approvalId: string; toolCallId: string; reason?: string }[] = []
  const answered = new Set<string>()
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue
    for (const p of m.content) {
      if (p.type === 'tool-call') calls.set(p.toolCallId, { toolName: p.toolName, input: p.input })
      if (p.type === 'tool-approval-request') requests.push({ approvalId: p.approvalId, toolCallId: p.toolCallId, reason: (p as { reason?: string }).reason })
      if (p.type === 'tool-approval-response') answered.add(p.approvalId)
    }
  }
  const held: HeldCall[] = []
  const responses: { type: 'tool-approval-response'; approvalId: string; approved: true }[] = []
  const pending = new Set<string>()
  for (const r of requests) {
    const call = calls.get(r.toolCallId)
    const gating = call && gatingOf(tools[call.toolName])
    if (answered.has(r.approvalId) || !call || !gating) continue
    const found = await identify(gating.interlock, toolCallOf(gating, call.input, { toolCallId: r.toolCallId, messages: [...messages], context: undefined }, 'approval'))
    if (!found.existing) continue // not Interlock's request
    pending.add(found.id)
    if (found.existing.state === 'HELD') held.push({ toolCallId: r.toolCallId, toolName: call.toolName, effectId: found.id, reason: r.reason ?? '' })
    else responses.push({ type: 'tool-approval-response', approvalId: r.approvalId, approved: true })
  }
  await recoverTools(tools, pending)
  if (held.length > 0 || responses.length === 0) return { messages: [...messages], held }
  return { messages: [...messages, { role: 'tool', content: responses }], held }
}

/**
 * Recovers each thread the gated tools of `tools` journal to (a thread given
 * as a function: recover it yourself with recoverThread), but for `except`:
 * effects whose own call is about to carry them on.
 */
export async function recoverTools(tools: Record<string, Tool<any, any, any>>, except: ReadonlySet<string> = new Set()): Promise<void> {
  const done = new Set<string>()
  for (const tool of Object.values(tools)) {
    const gating = gatingOf(tool)
    if (!gating || typeof gating.thread !== 'string' || gating.mode === 'outbox') continue
    const thread = threadOf(gating, { toolCallId: '', messages: [], context: undefined })
    if (done.has(thread)) continue
    done.add(thread)
    if (except.size === 0) await recoverThread(gating.interlock, thread)
    else await gating.interlock.gate.recover({ filter: (s) => s.effect.thread === thread && !except.has(s.effect.id) })
  }
}
