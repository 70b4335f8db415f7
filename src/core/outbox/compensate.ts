/**
 * Undo a committed effect the only way Interlock allows: a new effect,
 * submitted through the same gate and policy (so a compensation can be held
 * too), linked to the original by its key `compensates:<id>`. The key also
 * makes the request idempotent: asking twice submits the same effect id,
 * which the gate answers with the first outcome.
 */
import type { EffectInput, Receipt } from '../effect.js'
import { ExitCode, InterlockError } from '../errors.js'
import type { Gate } from '../gate.js'
import type { SubmitOutcome } from '../outcome.js'
import type { Store } from '../stores/store.js'
import { effectIn } from './operator-context.js'
import { COMPENSATES_PREFIX } from './show.js'

export interface CompensateResult {
  original: string
  compensation: EffectInput
  effectId: string
  outcome: SubmitOutcome
}

export async function compensateEffect(gate: Gate, store: Store, effectId: string): Promise<CompensateResult> {
  const snap = await effectIn(store, effectId, ['COMMITTED'], 'compensated')
  const target = gate.target(snap.effect.target)
  if (!target.compensation) {
    throw new InterlockError('E_NOT_COMPENSABLE', ExitCode.CONFLICT, `effect ${effectId} on target ${target.name} cannot be compensated: ${target.notCompensable ?? 'the target declares no compensation'}`, {
      hint: 'Undo it by hand on the service, and record what you did.',
      context: { effectId, target: target.name },
    })
  }
  const c = await target.compensation(snap.effect, (snap.detail.receipt ?? {}) as Receipt)
  const compensation: EffectInput = {
    thread: snap.effect.thread,
    target: snap.effect.target,
    action: c.action,
    args: c.args,
    key: `${COMPENSATES_PREFIX}${effectId}`,
  }
  if (c.premises) compensation.premises = c.premises
  const outcome = await gate.submit(compensation)
  return { original: effectId, compensation, effectId: outcome.effectId, outcome }
}
