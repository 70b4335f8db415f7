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
 *
 * A tool that declares an `outputSchema` must answer `structuredContent`
 * that conforms to it (same page, "Output Schema"), and the SDK's client
 * rejects a result without it unless it is an error. The server's own
 * results, live or journaled, carry theirs. What the proxy composes for a
 * COMMITTED call whose result it does not have (found done by the tier-2
 * query after a crash, or larger than max_result_bytes) cannot: it knows
 * nothing of the schema. For such a tool it is a tool error (isError, which
 * needs no structuredContent) whose text says the call was done;
 * `_meta["interlock/state"]` still says COMMITTED.
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
  /** The tool declares an outputSchema: a result that is not an error must carry structuredContent. */
  outputSchema?: boolean
}

export function answerOf({ outcome, tool, target, live, scrub, outputSchema }: CallAnswerInput): JsonObject {
  const id = outcome.effectId
  const told = (w: Words): JsonObject => marked({ content: [{ type: 'text', text: w.text }], isError: true }, id, w.state, false)
  // Done, and its result is not here: words of ours, which cannot meet the tool's output schema.
  const noResult = (answer: JsonObject): JsonObject => marked(outputSchema ? asToolError(answer, tool) : answer, id, 'COMMITTED', true)
  switch (outcome.status) {
    case 'committed': {
      if (live) return marked(live, id, 'COMMITTED', false)
      if (foundAtService(outcome) || outcome.receipt.found) return noResult({ content: [{ type: 'text', text: doneWords(outcome, false, { tool, target, scrub }).text }] })
      const kept = outcome.receipt.result
      if (kept !== null && typeof kept === 'object' && !Array.isArray(kept)) return marked(kept, id, 'COMMITTED', true)
      return noResult(resultOf(outcome.receipt, id))
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

/** A COMMITTED call's words, as a tool error that says it is one only for the output schema's sake. */
function asToolError(answer: JsonObject, tool: string): JsonObject {
  const content = Array.isArray(answer.content) ? answer.content : []
  const why = `(Told as an error only because ${tool} declares an output schema and its result is not here to give: the call was done; do not make it again.)`
  return { ...answer, content: [...content, { type: 'text', text: why }], isError: true }
}
