/**
 * The shared core of the agent integrations (`agent-interlock/agent`): one
 * tool call through Interlock, the words a model is told, the thread a run's
 * effects journal to, the hold check before a framework runs a tool, and
 * recovery before a run resumes. Each framework adapter is a thin layer on
 * these; a framework without one uses them directly: a tool function whose
 * body is `runToolCall`.
 */
export { runToolCall, identify, type ToolCall, type CallOptions, type GatedCallOptions, type ToolAnswer, type Identified } from './tool-call.js'
export { holdBeforeRun, wouldHold, type HoldAnswer } from './hold.js'
export { recoverThread } from './resume.js'
export { threadName, callKey } from './thread-name.js'
export { submitAndCarry, type RunMode, type CarryOptions } from './carry.js'
export { chooseOccurrence, type Dedupe, type Occurrence, type OccurrenceLookup } from './occurrence.js'
export { doneWords, notDoneWords, refusedWords, type Words, type Wording } from './words.js'
