/**
 * One look at an effect from inside a durable engine's step, through the
 * integrations' shared core (agent/carry.ts): submit it, inline (this
 * process journals and sends, `interlock.gate`) or to the outbox (this
 * process proposes, a relay sends, `interlock.outbox`). An effect journaled
 * before this look (the engine runs the step again after a crash, or looks
 * again after a durable wait for a release) that nobody here carries on is
 * finished by its tier as recovery does: tier 1 sent again with the same key,
 * tier 2 asked first, tier 3 AMBIGUOUS (recovery.ts).
 *
 * An effect submitted for the first time is not recovered at once when its
 * tries ran out: the engine's next look (a durable wait, a retry) does that.
 */
import { toEffect, type EffectInput } from '../../core/effect.js'
import type { Interlock } from '../../core/interlock.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import { submitAndCarry, type RunMode } from '../agent/carry.js'

export type { RunMode }

export interface LookOptions {
  /** 'inline' (default): this process journals and sends. 'outbox': it proposes; `interlock relay` sends. */
  mode?: RunMode
  /** Outbox mode: the longest a look waits for a relay's outcome (default 10 s). */
  waitMs?: number
}

export const DEFAULT_WAIT_MS = 10_000

export async function look(interlock: Interlock, input: EffectInput, options: LookOptions = {}): Promise<SubmitOutcome> {
  // Validates the effect as submit does: a bad one is refused here, before anything is read.
  const id = toEffect(input).id
  const isNew = !(await interlock.store.get(id))
  return submitAndCarry(interlock, input, { mode: options.mode ?? 'inline', waitMs: options.waitMs ?? DEFAULT_WAIT_MS, isNew })
}
