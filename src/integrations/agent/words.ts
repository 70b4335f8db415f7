/**
 * What a model (and the person reading its transcript) is told about a side
 * effect, by where it stands. Written once, for every integration: the MCP
 * proxy's tool errors and each agent framework's tool results say the same.
 *
 * Each text says whether anything was sent, what happens next, and who acts
 * (the agent, an operator, nobody), naming the effect so both can find it.
 */
import type { JsonObject } from '../../core/canonical-json.js'
import { foundAtService, type SubmitOutcome } from '../../core/outcome.js'

export interface Wording {
  /** The tool as the model knows it. */
  tool: string
  /** The Interlock target it acts on. */
  target: string
  /** Scrubs secrets from text composed here. */
  scrub: (text: string) => string
  /**
   * Calling the tool again with the same arguments would be a new effect
   * (the framework's call id alone names this one), so the model is told not
   * to call again for a held or in-flight call: operators, recovery or the
   * resumed run finish this one.
   */
  againIsNew?: boolean
}

export interface Words {
  /** The effect's state as journaled, or what the call came to: COMMITTED, HELD, REFUSED... */
  state: string
  text: string
  /** False only for an effect that took effect. */
  isError: boolean
}

/** Text for an outcome other than COMMITTED (whose result is the service's own). */
export function notDoneWords(outcome: Exclude<SubmitOutcome, { status: 'committed' }>, w: Wording): Words {
  const id = outcome.effectId
  const said = (state: string, text: string): Words => ({ state, text: w.scrub(text), isError: true })
  switch (outcome.status) {
    case 'failed':
      return said('FAILED', `Failed, nothing was done: ${w.target} refused this call (effect ${id}): ${sentence(outcome.reason)}`)
    case 'held':
      return said(
        'HELD',
        `Held for operators: this call (${w.tool} on ${w.target}, effect ${id}) waits for a release under rule "${outcome.rule}"${outcome.reason ? ` (${outcome.reason})` : ''}. Nothing was sent.\n` +
          `An operator releases it with:\n  interlock outbox release ${id}\n` +
          (w.againIsNew
            ? `Do not call this tool again for it: that would be a second ${w.tool}.`
            : 'Call this tool again with the same arguments once it is released to get its result.'),
      )
    case 'rejected':
      return said('REJECTED', `Rejected, nothing was sent: what this call rests on changed since it was read:\n- ${outcome.violations.join('\n- ')}\nRead it again and decide anew (effect ${id}).`)
    case 'ambiguous':
      return said(
        'AMBIGUOUS',
        `AMBIGUOUS: this call (${w.tool} on ${w.target}, effect ${id}) was sent, and nobody can know whether it took effect: ${outcome.reason}.\n` +
          'It will not be sent again on its own. An operator must check and resolve it:\n' +
          `  interlock outbox resolve ${id} --applied    (or --not-applied)`,
      )
    case 'in_flight':
      return said(
        outcome.state,
        `In flight: this call (effect ${id}) is journaled and ${outcome.state}${outcome.reason ? `: ${outcome.reason}` : ''}. It will be finished${outcome.notBefore ? ` not before ${outcome.notBefore}` : ''}; ` +
          (w.againIsNew
            ? `do not call this tool again for it: that would be a second ${w.tool}.`
            : 'call this tool again with the same arguments for its result.'),
      )
  }
}

/**
 * Text for a COMMITTED effect: the result, and whether this call made it now
 * or found it made before (a re-execution after a crash, a retry), so a model
 * does not report a second refund that never happened.
 */
export function doneWords(outcome: Extract<SubmitOutcome, { status: 'committed' }>, madeNow: boolean, w: Wording, result?: string): Words {
  const id = outcome.effectId
  const shown = result ?? receiptText(outcome.receipt)
  if (madeNow) return { state: 'COMMITTED', text: w.scrub(`Done (effect ${id}).${shown ? `\nResult: ${shown}` : ''}`), isError: false }
  if (foundAtService(outcome) || outcome.receipt.found === true) {
    return { state: 'COMMITTED', text: w.scrub(`Already done: this call had been made before (effect ${id}); ${w.target}'s own record shows it. It was not made again.`), isError: false }
  }
  return { state: 'COMMITTED', text: w.scrub(`Already done: this call had been made before (effect ${id}) and was not made again.${shown ? `\nResult then: ${shown}` : ''}`), isError: false }
}

/** A call refused for what it is (bad arguments, a secret in them, an unknown target): nothing happened. */
export function refusedWords(message: string, w: Pick<Wording, 'scrub'>): Words {
  return { state: 'REFUSED', text: w.scrub(`Refused, nothing was sent or journaled: ${message}`), isError: true }
}

function receiptText(receipt: JsonObject): string {
  return Object.keys(receipt).length === 0 ? '' : JSON.stringify(receipt)
}

/** A reason as a sentence: a service's own text often ends with its full stop already. */
function sentence(reason: string): string {
  return /[.!?]$/.test(reason.trim()) ? reason.trim() : `${reason.trim()}.`
}
