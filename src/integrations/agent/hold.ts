/**
 * Whether a tool call waits for operators, asked before the framework runs
 * the tool: for frameworks whose own human-in-the-loop pause must be raised
 * before execution (the OpenAI Agents SDK's needsApproval, the AI SDK's
 * toolApproval). The release stays with Interlock's operators, signed; the
 * framework only pauses, persists and resumes.
 *
 * - journaled and HELD: held;
 * - not journaled and a policy rule would hold it: submitted now, which
 *   journals it HELD and sends nothing: held;
 * - anything else (released since, committed, rejected, or no rule holds
 *   it): not held, and the tool runs and reports.
 *
 * The run identifies the call again rather than trusting this first look:
 * between the two, another caller may have journaled the effect, or released
 * and sent it, and the answer (replayed or not, done now or before, premises
 * captured or kept, an in-flight one carried on) is the store's as the run
 * finds it.
 */
import { toEffect } from '../../core/effect.js'
import { InputError } from '../../core/errors.js'
import type { Interlock } from '../../core/interlock.js'
import type { Hold } from '../../core/policy.js'
import { tierFor } from '../../core/targets/target.js'
import { identify, runToolCall, type CallOptions, type ToolAnswer, type ToolCall } from './tool-call.js'

export interface HoldAnswer {
  held: boolean
  effectId?: string
  /** When held: what to tell the model and the person approving (rule, release command). */
  answer?: ToolAnswer
}

export async function holdBeforeRun(interlock: Interlock, call: ToolCall, options: CallOptions = {}): Promise<HoldAnswer> {
  const found = await identify(interlock, call, options)
  if (found.existing) {
    if (found.existing.state !== 'HELD') return { held: false, effectId: found.id }
    // Held when looked at, but it may be released and sent before the run reads it: the run's answer decides.
    const answer = await runToolCall(interlock, call, options)
    return { held: answer.status === 'held', effectId: found.id, answer }
  }
  if (!wouldHold(interlock, call)) return { held: false, effectId: found.id }
  const answer = await runToolCall(interlock, call, options)
  return { held: answer.status === 'held', effectId: found.id, answer }
}

/** The rule that would hold this call, under the config's policy (the relay applies the same one in outbox mode). */
export function wouldHold(interlock: Interlock, call: Pick<ToolCall, 'thread' | 'target' | 'action' | 'args'>): Hold | null {
  const target = interlock.targets.get(call.target)
  if (!target) throw new InputError(`no target named ${JSON.stringify(call.target)} in the config`)
  return interlock.policy.evaluate(toEffect({ thread: call.thread, target: call.target, action: call.action, args: call.args }), tierFor(target, call.action))
}
