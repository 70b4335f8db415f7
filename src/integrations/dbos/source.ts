/**
 * Where a step's effect goes, through the agent integrations' shared core
 * (src/integrations/agent/carry.ts): the Interlock's inline gate (this
 * process journals and sends) or its outbox (this process proposes, a relay
 * sends). Two moves: submit the effect, and look again at one submitted
 * before, carrying it on where it waits for nobody but this process.
 */
import { submitAndCarry, type RunMode } from '../agent/carry.js'
import type { EffectInput } from '../../core/effect.js'
import { look } from '../durable/carry.js'
import type { Interlock } from '../../core/interlock.js'
import { outcomeOf, type SubmitOutcome } from '../../core/outcome.js'

export type { RunMode }

/** Outbox mode: how long a step waits for a relay's outcome before the workflow waits instead, durably. */
const SETTLE_MS = 5_000

export function submitEffect(interlock: Interlock, input: EffectInput, mode: RunMode): Promise<SubmitOutcome> {
  // Journaled already: an earlier run of this step, which died with it in flight, is carried on by its tier (durable/carry.ts).
  return look(interlock, input, { mode, waitMs: SETTLE_MS })
}

/**
 * Where the effect stands now. HELD waits for an operator's release
 * (`interlock outbox release` makes it AUTHORIZED); an effect the service
 * asked to wait waits for its time; anything else in flight is carried on
 * (inline: an AUTHORIZED effect is sent, one left DISPATCHED is recovered by
 * its tier; outbox: the relay's outcome is awaited a little).
 */
export async function lookAgain(interlock: Interlock, id: string, mode: RunMode, now: number): Promise<SubmitOutcome> {
  const snap = await interlock.store.get(id)
  if (!snap) return { status: 'in_flight', effectId: id, state: 'PROPOSED', reason: 'not in the journal yet' }
  const o = outcomeOf(snap)
  if (o.status !== 'in_flight' || (o.notBefore && Date.parse(o.notBefore) > now)) return o
  const { thread, target, action, args, key } = snap.effect
  return submitAndCarry(interlock, key === undefined ? { thread, target, action, args } : { thread, target, action, args, key }, { mode, waitMs: SETTLE_MS, isNew: false })
}
