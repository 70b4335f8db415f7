/**
 * What the client sees of a journaled call, by where its effect stands:
 *
 * - COMMITTED: the server's own CallToolResult (the live one, or the
 *   journal's for a call made before);
 * - FAILED: the server's own error: its tool error result, or its JSON-RPC
 *   error, passed on as that error;
 * - HELD, REJECTED, AMBIGUOUS, in flight: a tool error in the words every
 *   integration uses (../agent/words.ts).
 *
 * Tool errors, not protocol errors, so the model reads them and can act
 * (modelcontextprotocol.io/specification/2025-06-18/server/tools#error-handling:
 * tool execution errors are reported in the result with isError).
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import type { JsonObject } from '../../core/canonical-json.js'
import { foundAtService, type SubmitOutcome } from '../../core/outcome.js'
import { resultOf } from '../../core/targets/mcp/index.js'
import { marked } from './meta.js'
import { doneWords, notDoneWords, type Words } from '../agent/words.js'

export interface CallAnswerInput {
  outcome: SubmitOutcome
  tool: string
  target: string
  /** The server's result to this very call, when it was made now. */
  live?: JsonObject
  /** Scrubs secrets from text composed here. */
  scrub: (text: string) => string
}

export function answerOf({ outcome, tool, target, live, scrub }: CallAnswerInput): JsonObject {
  const id = outcome.effectId
  const told = (w: Words): JsonObject => marked({ content: [{ type: 'text', text: w.text }], isError: true }, id, w.state, false)
  switch (outcome.status) {
    case 'committed': {
      if (live) return marked(live, id, 'COMMITTED', false)
      if (foundAtService(outcome) || outcome.receipt.found) {
        return marked({ content: [{ type: 'text', text: doneWords(outcome, false, { tool, target, scrub }).text }] }, id, 'COMMITTED', true)
      }
      return marked(resultOf(outcome.receipt, id), id, 'COMMITTED', true)
    }
    case 'failed': {
      if (live) return marked(live, id, 'FAILED', false)
      const answer = outcome.answer
      const error = answer?.error as { code?: unknown; message?: unknown; data?: unknown } | undefined
      if (error && typeof error.code === 'number') throw new McpError(error.code, String(error.message ?? outcome.reason), error.data)
      if (answer && (answer.result || answer.truncated)) return marked({ ...resultOf(answer, id), isError: true }, id, 'FAILED', true)
      return told(notDoneWords(outcome, { tool, target, scrub }))
    }
    default:
      return told(notDoneWords(outcome, { tool, target, scrub }))
  }
}
