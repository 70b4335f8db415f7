/**
 * Resuming an Agents SDK run with Interlock: first finish what a crash left
 * in flight in the run's thread (recoverThread: tier 1 re-applied with its
 * key, tier 2 asked, tier 3 AMBIGUOUS), then let the SDK go on. Every call it
 * re-executes, and every call of a turn it asks the model again, finds its
 * effect's outcome in the journal instead of sending it again.
 *
 * - resumeRun: from a RunState the app saved (`result.state.toString()` at an
 *   interruption), the SDK's own way to pause and resume.
 * - rerunInput: a run that died with no RunState saved, run again from its
 *   input; the context must carry the crashed run's `interlockRun`.
 */
import { run, RunState, type Agent, type AgentInputItem, type NonStreamRunOptions, type RunResult, type RunToolApprovalItem } from '@openai/agents'
import type { Interlock } from '../../core/interlock.js'
import { UsageError } from '../../core/errors.js'
import type { RunMode } from '../agent/carry.js'
import { recoverThread } from '../agent/resume.js'
import { threadOf, type InterlockRunContext, type ThreadOf } from './run-context.js'

export interface ResumeOptions<Context> {
  /** As the tools' `thread` option (default: `context.interlockThread`). */
  thread?: ThreadOf<Context>
  /** outbox: relays finish what was in flight, nothing to recover here. */
  mode?: RunMode
  /** Passed to run(). */
  run?: Omit<NonStreamRunOptions<Context>, 'context'>
}

type AnyAgent = Agent<any, any>

export async function resumeRun<Context, TAgent extends AnyAgent>(
  interlock: Interlock,
  agent: TAgent,
  saved: string | RunState<Context, TAgent>,
  options: ResumeOptions<Context> = {},
): Promise<RunResult<Context, TAgent>> {
  const state = typeof saved === 'string' ? await RunState.fromString<Context, TAgent>(agent, saved) : saved
  await recoverThread(interlock, threadOf(state._context.context, options.thread), options.mode)
  return run(agent, state, options.run) as Promise<RunResult<Context, TAgent>>
}

export async function rerunInput<Context extends InterlockRunContext, TAgent extends AnyAgent>(
  interlock: Interlock,
  agent: TAgent,
  input: string | AgentInputItem[],
  context: Context,
  options: ResumeOptions<Context> = {},
): Promise<RunResult<Context, TAgent>> {
  if (!context.interlockRun) {
    throw new UsageError('re-running a run from its input needs the crashed run\'s interlockRun in the context', {
      hint: 'Give every run an interlockRun of your own (a request or message id) and the same one when you run it again: its calls are then the same effects.',
    })
  }
  await recoverThread(interlock, threadOf(context, options.thread), options.mode)
  return run(agent, input, { ...options.run, context }) as Promise<RunResult<Context, TAgent>>
}

/** What heldCalls reads of a RunState (any context type). */
export interface PausedState {
  getInterruptions(): RunToolApprovalItem[]
  _context: { context: unknown }
}

/** The interruptions of a paused run that Interlock holds, with what to show whoever waits (the rule, the release command). */
export function heldCalls(state: PausedState): { callId: string; toolName: string; effectId: string; text: string }[] {
  const calls = (state._context.context as InterlockRunContext | undefined)?.interlockCalls ?? {}
  return state.getInterruptions().flatMap((item) => {
    const raw = item.rawItem as { callId?: string }
    const held = raw.callId ? calls[raw.callId]?.held : undefined
    return held && raw.callId ? [{ callId: raw.callId, toolName: item.name ?? '', effectId: held.effectId, text: held.text }] : []
  })
}
