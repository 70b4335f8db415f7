/**
 * `agent-interlock/anthropic`: the Anthropic SDK's tools through Interlock.
 * gatedTool wraps a runnable tool (betaZodTool, betaTool) for the tool
 * runner; gatedToolResult answers one tool_use in a hand-written loop;
 * resumeToolUses answers a persisted reply left unanswered by a crash or a
 * hold, before a new runner starts; heldToolUses pauses a run on a hold.
 */
export { gatedTool, gatedToolResult, type GateOptions, type ToolUseLike, type ToolResultBlock } from './gated-tool.js'
export { resumeToolUses, heldToolUses, type HeldToolUse, type Resumed, type MessageLike } from './resume.js'
