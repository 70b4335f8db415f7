/**
 * An operator's signed answer to an AMBIGUOUS effect (the target cannot say
 * whether it happened): applied → COMMITTED, not applied → FAILED, or, only
 * when asked for explicitly, not applied and send it again → DISPATCHED.
 * The signed resolution is journaled in the record's data.
 */
import type { JsonObject } from '../canonical-json.js'
import { effectDigest } from '../crypto/digest.js'
import { newNonce, signStatement } from '../crypto/sign.js'
import { signedJson, type ResolutionStatement, type Signed } from '../crypto/statements.js'
import type { EffectSnapshot } from '../effect.js'
import { ConflictError } from '../errors.js'
import { assertTrusted, effectIn, type OperatorContext } from './operator-context.js'

export type Resolution = 'applied' | 'not-applied' | 'redispatch'

export interface ResolveResult {
  effectId: string
  state: 'COMMITTED' | 'FAILED' | 'DISPATCHED'
  operator: string
  resolution: Signed<ResolutionStatement>
  /** The effect as it now stands (for a redispatch: DISPATCHED, to send). */
  snapshot: EffectSnapshot
}

export async function resolveEffect(ctx: OperatorContext, effectId: string, how: Resolution): Promise<ResolveResult> {
  assertTrusted(ctx)
  const snap = await effectIn(ctx.store, effectId, ['AMBIGUOUS'], 'resolved')
  const statement: ResolutionStatement = {
    kind: 'resolution',
    effectId,
    digest: effectDigest(snap.effect),
    operator: ctx.key.name,
    applied: how === 'applied',
    redispatch: how === 'redispatch',
    signedAt: ctx.clock.now().toISOString(),
    nonce: newNonce(),
  }
  const resolution = signStatement(statement, ctx.key.seed)
  const by = `operator ${ctx.key.name}`
  const to = how === 'applied' ? 'COMMITTED' : how === 'not-applied' ? 'FAILED' : 'DISPATCHED'
  const data: JsonObject =
    to === 'COMMITTED'
      ? { receipt: {}, via: 'operator', resolution: signedJson(resolution) }
      : to === 'FAILED'
        ? { reason: `resolved as not applied by ${by}`, resolution: signedJson(resolution) }
        : { redispatch: true, resolution: signedJson(resolution) }
  const [r] = await ctx.store.append([{ effectId, from: 'AMBIGUOUS', to, data }])
  if (!r!.ok) {
    throw new ConflictError(`effect ${effectId} moved on while being resolved: it is now ${r!.current?.state ?? 'gone'}`, {
      context: { effectId, state: r!.current?.state },
    })
  }
  const rec = r!.record
  return { effectId, state: to, operator: ctx.key.name, resolution, snapshot: { ...snap, state: to, seq: rec.seq, detail: data, updatedAt: rec.at } }
}
