/**
 * The Interlock thread of a LangGraph run: its `configurable.thread_id`,
 * which every run with a checkpointer has, and which names the run again when
 * it resumes.
 */
import type { RunnableConfig } from '@langchain/core/runnables'
import { InputError } from '../../core/errors.js'
import { threadName } from '../agent/thread-name.js'

export function interlockThread(config: Pick<RunnableConfig, 'configurable'> & { config?: Pick<RunnableConfig, 'configurable'> }): string {
  const id: unknown = config.configurable?.thread_id ?? config.config?.configurable?.thread_id
  if ((typeof id !== 'string' || id === '') && typeof id !== 'number') {
    throw new InputError('a gated LangGraph tool runs in a thread: no configurable.thread_id in the run\'s config', {
      hint: 'Compile the graph with a checkpointer and invoke it with { configurable: { thread_id } }: the thread is what a crashed run resumes and what its effects are journaled under.',
    })
  }
  return threadName('langgraph', String(id))
}

