/**
 * What an outcome that stops a workflow step says: the agent integrations'
 * shared words (src/integrations/agent/words.ts) for AMBIGUOUS, REJECTED and
 * FAILED, with the step and workflow named; and, for the two stops only a
 * durable engine has (a HELD effect the step may not wait for, a wait that
 * ran out), words of its own: the workflow waits itself, nobody calls again.
 */
import { notDoneWords } from '../agent/words.js'
import type { SubmitOutcome } from '../../core/outcome.js'

export interface Place {
  /** The step's name and workflow, e.g. `step "refund" of DBOS workflow order-42`. */
  step: string
  target: string
  action: string
  scrub: (text: string) => string
}

export interface Said {
  message: string
  hint: string
}

export function outcomeText(o: Exclude<SubmitOutcome, { status: 'committed' }>, at: Place): Said {
  const id = o.effectId
  if (o.status === 'held') {
    return {
      message: at.scrub(`Held for operators: effect ${id} (${at.action} on ${at.target}, ${at.step}) waits for a release under rule "${o.rule}"${o.reason ? ` (${o.reason})` : ''}. Nothing was sent.`),
      hint: `An operator releases it with:\n  interlock outbox release ${id}`,
    }
  }
  if (o.status === 'in_flight') {
    return {
      message: at.scrub(`In flight: effect ${id} (${at.action} on ${at.target}, ${at.step}) is journaled and ${o.state}${o.reason ? `: ${o.reason}` : ''}.`),
      hint: `It is never sent twice; it is finished by the next run of this step, \`gate.recover()\` or a relay. See it with: interlock outbox show ${id}`,
    }
  }
  const words = notDoneWords(o, { tool: at.action, target: at.target, scrub: at.scrub })
  return { message: `${words.text}\n(${at.step})`, hint: HINTS[o.status](id) }
}

const HINTS = {
  ambiguous: (id: string) => `An operator checks the target and resolves it:\n  interlock outbox resolve ${id} --applied    (or --not-applied)`,
  rejected: (id: string) => `Read it again and decide anew; the journal keeps why: interlock outbox show ${id}`,
  failed: (id: string) => `See what the target answered: interlock outbox show ${id}`,
}
