/**
 * The policy port: decides, after PROPOSED, whether an effect may go on or
 * must wait (HELD) for operators to release it. The rules themselves live in
 * interlock.toml; the gate only asks.
 */
import type { Effect, Tier } from './effect.js'

export interface Hold {
  /** Name of the rule that held the effect, recorded in the journal. */
  rule: string
  /** Why, in words (e.g. "args.amount 900.00 USD is above 500.00"), recorded beside the rule. */
  reason?: string
}

export interface Policy {
  evaluate(effect: Effect, tier: Tier): Hold | null
}

/** No rules: nothing is held. */
export const allowAll: Policy = { evaluate: () => null }
