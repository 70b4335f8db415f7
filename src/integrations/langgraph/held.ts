/**
 * onHeld 'interrupt': a HELD effect pauses the run with LangGraph's own
 * interrupt(), which needs a checkpointer and surfaces as `__interrupt__` in
 * the result (and in `graph.getState(config).tasks[].interrupts`). Operators
 * release it with Interlock (signed, `interlock outbox release <id>`); the app
 * then resumes the thread with `resumeGraph(..., new Command({ resume: ... }))`.
 * LangGraph runs the tool node again from its start, the call finds its
 * effect (the same tool_call_id) and reports what came of it. Resumed before
 * anyone released it, the call is still HELD and pauses the run again: the
 * value given to resume is not a release.
 */
import { interrupt } from '@langchain/langgraph'
import type { ToolAnswer } from '../agent/tool-call.js'

/** The value of the interrupt: enough for a person or an app to act on without reading the journal. */
export interface HeldInterrupt {
  interlock: 'HELD'
  effectId: string
  rule: string
  tool: string
  target: string
  /** The command an operator runs. */
  release: string
  /** What the model would have been told. */
  text: string
}

export async function pauseWhileHeld(call: () => Promise<ToolAnswer>, w: { tool: string; target: string }): Promise<ToolAnswer> {
  let answer = await call()
  while (answer.status === 'held' && answer.outcome?.status === 'held') {
    const o = answer.outcome
    const value: HeldInterrupt = { interlock: 'HELD', effectId: o.effectId, rule: o.rule, tool: w.tool, target: w.target, release: `interlock outbox release ${o.effectId}`, text: answer.text }
    // Throws the first time; once resumed, returns, and the call is asked again.
    interrupt(value)
    answer = await call()
  }
  return answer
}

/** The held effects a run paused on: the values of its result's `__interrupt__` that Interlock raised. */
export function heldInterrupts(result: unknown): HeldInterrupt[] {
  const raised = (result as { __interrupt__?: { value?: unknown }[] } | null)?.__interrupt__
  if (!Array.isArray(raised)) return []
  return raised.map((i) => i?.value).filter((v): v is HeldInterrupt => (v as HeldInterrupt | undefined)?.interlock === 'HELD')
}
