/** `outbox show` and release's confirmation: one effect, what holds it, its whole history and who signed what. */
import type { Effect, EffectSnapshot } from '../effect.js'
import { effectDigest } from '../crypto/digest.js'
import type { Statement } from '../crypto/statements.js'
import { NotFoundError } from '../errors.js'
import type { JournalRecord, Store } from '../stores/store.js'
import { heldRule, statementsIn } from './journal-statements.js'

export interface EffectDetails {
  effect: Effect
  tier: number
  state: EffectSnapshot['state']
  digest: string
  /** The money at stake, when the args say (amount and currency). */
  amount?: string
  rule?: string
  ruleReason?: string
  /** The effect this one compensates (key `compensates:<id>`). */
  compensates?: string
  history: JournalRecord[]
  statements: { seq: number; statement: Statement }[]
}

export const COMPENSATES_PREFIX = 'compensates:'

export async function effectDetails(store: Store, effectId: string): Promise<EffectDetails> {
  const snap = await store.get(effectId)
  if (!snap) {
    throw new NotFoundError(`no effect ${effectId} in the journal`, {
      hint: 'List effects with `interlock outbox list`; ids are 64 hex characters.',
      context: { effectId },
    })
  }
  // history() verifies each record against its hash and the lifecycle.
  const history = await store.history(effectId)
  const held = heldRule(history)
  const details: EffectDetails = {
    effect: snap.effect,
    tier: snap.tier,
    state: snap.state,
    digest: effectDigest(snap.effect),
    history,
    statements: history.flatMap((r) => statementsIn(r.data).map((s) => ({ seq: r.seq, statement: s.statement }))),
  }
  const { amount, currency } = snap.effect.args
  if (typeof amount === 'string' || typeof amount === 'number') details.amount = `${amount}${typeof currency === 'string' ? ` ${currency}` : ''}`
  if (held) {
    details.rule = held.rule
    if (held.reason !== undefined) details.ruleReason = held.reason
  }
  if (snap.effect.key?.startsWith(COMPENSATES_PREFIX)) details.compensates = snap.effect.key.slice(COMPENSATES_PREFIX.length)
  return details
}
