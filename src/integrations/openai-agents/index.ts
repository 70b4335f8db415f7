/**
 * `agent-interlock/openai-agents`: the OpenAI Agents SDK adapter. A tool
 * declared with interlockTool() instead of tool() makes its side effect
 * through Interlock; resumeRun() (from a saved RunState) and rerunInput()
 * recover the run's thread first. `@openai/agents` is an optional peer
 * dependency: importing `agent-interlock` never loads it.
 */
export { interlockTool, type InterlockToolOptions } from './tool.js'
export { resumeRun, rerunInput, heldCalls, type ResumeOptions } from './resume.js'
export { threadOf, type InterlockRunContext, type CallRecord, type ThreadOf } from './run-context.js'
