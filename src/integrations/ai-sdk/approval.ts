/**
 * Interlock's holds through the AI SDK's own approval flow (call-level
 * `toolApproval`, AI SDK 7). For each gated tool, asked before the SDK runs
 * it (holdBeforeRun):
 * - a call a policy rule holds is journaled HELD (nothing sent) and answered
 *   `user-approval` with the rule and the release command as its reason: the
 *   SDK stops with a tool-approval-request, which the app saves with the
 *   call (and its toolCallId) and shows;
 * - once an operator has released it (`interlock outbox release <id>`), the
 *   app adds an approval response and runs again: asked again, the check
 *   says the call is no longer held, and `execute` carries the same effect
 *   (named by the saved toolCallId) to its end;
 * - anything else: `not-applicable`, and the tool runs.
 * The release stays with Interlock's signed operators: approving in the
 * app's UI while the effect is still HELD only gets the held text back;
 * resumeApprovals (resume.ts) answers Interlock's requests only once
 * released.
 */
import type { ModelMessage, Tool } from 'ai'
import { holdBeforeRun } from '../agent/hold.js'
import { callOptions, gatingOf, nameOf, toolCallOf } from './gated-tool.js'

export type ApprovalStatus = 'not-applicable' | { type: 'user-approval'; reason: string }

export type InterlockApproval = Record<string, (input: any, options: { toolCallId: string; messages: ModelMessage[]; toolContext: unknown }) => Promise<ApprovalStatus>>

/** `toolApproval` entries for the gated tools of `tools`; spread your own entries beside them. */
export function interlockApproval(tools: Record<string, Tool<any, any, any>>): InterlockApproval {
  const approval: InterlockApproval = {}
  for (const [name, tool] of Object.entries(tools)) {
    const gating = gatingOf(tool)
    if (!gating) continue
    if (nameOf(gating) !== name) throw new TypeError(`tool "${name}" was gated as "${nameOf(gating)}": give gatedTool(…, { name: "${name}" })`)
    approval[name] = async (input, o) => {
      const check = await holdBeforeRun(gating.interlock, toolCallOf(gating, input, { toolCallId: o.toolCallId, messages: o.messages, context: o.toolContext }, 'approval'), callOptions(gating))
      return check.held ? { type: 'user-approval', reason: check.answer!.text } : 'not-applicable'
    }
  }
  return approval
}
