/**
 * What an outcome that stops a step says, in words that name the effect and
 * the command an operator runs. Local to the DBOS helper until the agent
 * adapters' shared wording (src/integrations/agent/) takes it over.
 */
import type { SubmitOutcome } from '../../core/outcome.js'

export interface Said {
  message: string
  hint: string
}

/** `what`: how the effect is named to a reader, e.g. `refund on payments (step "refund" of workflow order-42)`. */
export function outcomeText(o: SubmitOutcome, what: string): Said {
  const id = o.effectId
  switch (o.status) {
    case 'ambiguous':
      return {
        message: `AMBIGUOUS: effect ${id}, ${what}, was sent and nobody can know whether it took effect: ${clause(o.reason)}. It will not be sent again on its own.`,
        hint: `An operator checks the target and resolves it:\n  interlock outbox resolve ${id} --applied    (or --not-applied)`,
      }
    case 'rejected':
      return {
        message: `Rejected, nothing was sent: what effect ${id}, ${what}, rests on changed since it was read:\n- ${o.violations.join('\n- ')}`,
        hint: `Read it again and decide anew; the journal keeps why: interlock outbox show ${id}`,
      }
    case 'failed':
      return {
        message: `Failed: the target refused effect ${id}, ${what}: ${clause(o.reason)}. It did not take effect.`,
        hint: `See what the target answered: interlock outbox show ${id}`,
      }
    case 'held':
      return {
        message: `Held for operators: effect ${id}, ${what}, waits for a release under rule "${o.rule}"${o.reason ? ` (${o.reason})` : ''}. Nothing was sent.`,
        hint: `An operator releases it with:\n  interlock outbox release ${id}`,
      }
    case 'in_flight':
      return {
        message: `In flight: effect ${id}, ${what}, is journaled and ${o.state}${o.reason ? `: ${o.reason}` : ''}.`,
        hint: `It is finished by whoever carries it on (this step run again, \`gate.recover()\`, a relay); see it with: interlock outbox show ${id}`,
      }
    case 'committed':
      return { message: `Committed: effect ${id}, ${what}.`, hint: '' }
  }
}

/** A reason set inside a sentence: without the full stop a service may end it with. */
function clause(reason: string): string {
  return reason.replace(/[.\s]+$/, '')
}
