/**
 * `agent-interlock/langgraph`: LangGraph tools whose side effects go through
 * Interlock, and the resume that recovers a thread before its graph goes on.
 * `@langchain/langgraph` and `@langchain/core` are the app's own (optional
 * peer dependencies); nothing else in the package loads them.
 */
export { gatedTool, type GatedToolOptions, type EffectArtifact, type ToolDeclaration } from './gated-tool.js'
export { resumeGraph, recoverGraphThread } from './resume.js'
export { interlockThread } from './thread.js'
export type { Identity } from './identity.js'
export { heldInterrupts, type HeldInterrupt } from './held.js'
