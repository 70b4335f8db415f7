/**
 * Resuming a LangGraph thread: Interlock first finishes what a crash left in
 * flight in that thread (by tier: re-applied with the same key, asked, or
 * AMBIGUOUS; agent/resume.ts), then the graph goes on from its checkpoint and
 * re-executes the interrupted tool calls, each finding its effect's outcome
 * in the journal instead of sending it again.
 *
 * `input`: null to go on from the checkpoint (durability "sync" or "async"),
 * a `Command({ resume })` to answer an interrupt, or the run's original input
 * when nothing was checkpointed (durability "exit": the run starts over, and
 * its gated tools name their calls by content).
 */
import type { RunnableConfig } from '@langchain/core/runnables'
import type { Interlock } from '../../core/interlock.js'
import type { RecoveryReport } from '../../core/recovery.js'
import { recoverThread, type RunMode } from '../agent/index.js'
import { interlockThread } from './thread.js'

/** A compiled graph, or anything invoked as one. */
interface Invocable {
  invoke(input: never, config?: RunnableConfig): Promise<unknown>
}

export async function resumeGraph<G extends Invocable>(
  interlock: Interlock,
  graph: G,
  config: RunnableConfig,
  input: Parameters<G['invoke']>[0] | null = null,
  options: { mode?: RunMode } = {},
): Promise<Awaited<ReturnType<G['invoke']>>> {
  await recoverGraphThread(interlock, config, options)
  return (await graph.invoke(input as never, config)) as Awaited<ReturnType<G['invoke']>>
}

/** The recovery alone, for an app that resumes the graph itself (graph.stream, a subgraph). */
export function recoverGraphThread(interlock: Interlock, config: RunnableConfig, options: { mode?: RunMode } = {}): Promise<RecoveryReport | undefined> {
  return recoverThread(interlock, interlockThread(config), options.mode)
}
