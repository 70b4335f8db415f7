/**
 * What the client sees of a journaled call, by where its effect stands:
 *
 * - COMMITTED: the server's own CallToolResult (the live one, or the
 *   journal's for a call made before);
 * - FAILED: the server's own error: its tool error result, or its JSON-RPC
 *   error, passed on as that error;
 * - HELD: a tool error naming the effect, the rule and the release command;
 * - REJECTED: a tool error naming what changed since the agent read it;
 * - AMBIGUOUS: a tool error saying nobody can know whether it happened and
 *   an operator must resolve it;
 * - in flight: a tool error saying it is journaled and will be finished.
 *
 * Tool errors, not protocol errors, so the model reads them and can act
 * (modelcontextprotocol.io/specification/2025-06-18/server/tools#error-handling:
 * tool execution errors are reported in the result with isError).
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import type { JsonObject } from '../../core/canonical-json.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import { resultOf } from '../../core/targets/mcp/index.js'
import { marked } from './meta.js'

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
  const said = (state: string, text: string): JsonObject => marked({ content: [{ type: 'text', text: scrub(text) }], isError: true }, id, state, false)
  switch (outcome.status) {
    case 'committed': {
      if (live) return marked(live, id, 'COMMITTED', false)
      if (outcome.via === 'query' || outcome.receipt.found) {
        return marked({ content: [{ type: 'text', text: `This call had been made before (effect ${id}): the server's own record shows it. Its result was not received then, so it cannot be repeated here.` }] }, id, 'COMMITTED', true)
      }
      return marked(resultOf(outcome.receipt, id), id, 'COMMITTED', true)
    }
    case 'failed': {
      if (live) return marked(live, id, 'FAILED', false)
      const answer = outcome.answer
      const error = answer?.error as { code?: unknown; message?: unknown; data?: unknown } | undefined
      if (error && typeof error.code === 'number') throw new McpError(error.code, String(error.message ?? outcome.reason), error.data)
      if (answer && (answer.result || answer.truncated)) return marked({ ...resultOf(answer, id), isError: true }, id, 'FAILED', true)
      return said('FAILED', `Failed: ${outcome.reason} (effect ${id}).`)
    }
    case 'held':
      return said(
        'HELD',
        `Held for operators: this call (${tool} on ${target}, effect ${id}) waits for a release under rule "${outcome.rule}". Nothing was sent.\n` +
          `An operator releases it with:\n  interlock outbox release ${id}\n` +
          'Call this tool again with the same arguments once it is released to get its result.',
      )
    case 'rejected':
      return said('REJECTED', `Rejected, nothing was sent: what this call rests on changed since it was read:\n- ${outcome.violations.join('\n- ')}\nRead it again and decide anew (effect ${id}).`)
    case 'ambiguous':
      return said(
        'AMBIGUOUS',
        `AMBIGUOUS: this call (${tool} on ${target}, effect ${id}) was sent, and nobody can know whether it took effect: ${outcome.reason}.\n` +
          'It will not be sent again on its own. An operator must check and resolve it:\n' +
          `  interlock outbox resolve ${id} --applied    (or --not-applied)`,
      )
    case 'in_flight':
      return said(
        outcome.state,
        `In flight: this call (effect ${id}) is journaled and ${outcome.state}${outcome.reason ? `: ${outcome.reason}` : ''}. It will be finished${outcome.notBefore ? ` not before ${outcome.notBefore}` : ''}; call this tool again with the same arguments for its result.`,
      )
  }
}
