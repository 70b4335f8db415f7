/** `outbox show` and release's confirmation: one effect, what holds it, its whole history and who signed what. */
import type { Effect, EffectSnapshot } from '../effect.js'
import { effectDigest } from '../crypto/digest.js'
import type { OperatorStatement, RelayReceiptStatement } from '../crypto/statements.js'
import { NotFoundError } from '../errors.js'
import type { JournalRecord, Store } from '../stores/store.js'
import { heldRule, statementsIn } from './journal-statements.js'
import { journalView } from './journaled-effect.js'

export interface EffectDetails {
  /** As its PROPOSED record holds it (what a relay sends and a release signs); the row's copy when the journal holds none. */
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
  /** Where the effects row departs from its journal (fields, never values): a row edited behind the journal; relays refuse it. */
  rowDisagrees?: string[]
  statements: { seq: number; statement: OperatorStatement | RelayReceiptStatement }[]
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
  const view = journalView(snap, history)
  const effect = view.ok ? view.effect : snap.effect
  const details: EffectDetails = {
    effect,
    tier: view.ok ? view.tier : snap.tier,
    state: snap.state,
    digest: effectDigest(effect),
    history,
    statements: history.flatMap((r) => statementsIn(r.data).map((s) => ({ seq: r.seq, statement: s.statement }))),
  }
  if (!view.ok) details.rowDisagrees = [view.reason]
  else if (view.rowDisagrees.length > 0) details.rowDisagrees = view.rowDisagrees
  const { amount, currency } = effect.args
  if (typeof amount === 'string' || typeof amount === 'number') details.amount = `${amount}${typeof currency === 'string' ? ` ${currency}` : ''}`
  if (held) {
    details.rule = held.rule
    if (held.reason !== undefined) details.ruleReason = held.reason
  }
  if (effect.key?.startsWith(COMPENSATES_PREFIX)) details.compensates = effect.key.slice(COMPENSATES_PREFIX.length)
  return details
}
