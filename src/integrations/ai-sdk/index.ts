/**
 * `agent-interlock/ai-sdk`: the AI SDK's tools through Interlock. gatedTool
 * wraps `tool({ ... })` so its effect is made once by an Interlock target;
 * interlockApproval turns Interlock's holds into the SDK's tool approvals;
 * resumeApprovals, before a chat goes on from its saved messages, finishes
 * what a crash left in flight and answers the approvals operators released.
 */
export { gatedTool, type GateOptions, type GatedOutput, type CallContext } from './gated-tool.js'
export { interlockApproval, type InterlockApproval, type ApprovalStatus } from './approval.js'
export { resumeApprovals, recoverTools, type ResumedChat, type HeldCall } from './resume.js'
