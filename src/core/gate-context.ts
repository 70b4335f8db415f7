/** What the lifecycle steps need, injected once by the Gate. */
import type { JsonObject } from './canonical-json.js'
import { effectJson, type Effect, type EffectSnapshot, type Tier } from './effect.js'
import { ConflictError, NotFoundError } from './errors.js'
import { crashPoint, stateCrashPoint } from './crash-points.js'
import type { State } from './lifecycle.js'
import type { Policy } from './policy.js'
import type { Store } from './stores/store.js'
import type { EffectTarget } from './targets/target.js'

export interface RetryOptions {
  /** Tries per dispatch (first one included) before a tier-1/2 effect is left in flight. */
  maxAttempts: number
  /** First back-off; doubled per try, capped at 30 s (and at maxWaitMs); a service's Retry-After wins. */
  backoffMs: number
  /**
   * The longest a dispatch waits in place between tries, for a service's
   * Retry-After or rate-limit reset as for its own back-off. A service that
   * asks for longer gets the effect back: it returns to AUTHORIZED until
   * then, so no process sleeps on it (returned.ts).
   */
  maxWaitMs: number
}

export interface GateContext {
  store: Store
  targets: Map<string, EffectTarget>
  policy: Policy
  retry: RetryOptions
  sleep(ms: number): Promise<void>
  /** Wall clock in epoch milliseconds, for the time a returned effect may be sent again (default Date.now). */
  now?(): number
  /**
   * Outbox relays only: whether this process still holds the effect's lease.
   * Asked right before every apply; false means another relay may have taken
   * the effect over, so this one must not send it (relay/README.md).
   */
  stillHeld?(effectId: string): boolean
  /** Told of each failed try that will be tried again, and of a target's fence stopping a request (a relay logs them). */
  observe?(event: DispatchEvent): void
}

export type DispatchEvent =
  | { kind: 'retry'; effectId: string; attempt: number; maxAttempts: number; reason: string; waitMs: number }
  | { kind: 'fenced'; effectId: string; reason: string }

export function targetOf(ctx: GateContext, name: string): EffectTarget {
  const t = ctx.targets.get(name)
  if (!t) {
    throw new NotFoundError(`no target named ${JSON.stringify(name)} is registered`, {
      hint: `Declare it under [targets.${name}] in interlock.toml, or register it with gate.register().`,
      context: { target: name, known: [...ctx.targets.keys()] },
    })
  }
  return t
}

/**
 * Makes one state change durable, then passes its crash point. Returns the new
 * snapshot, or the current one when another writer moved the effect first.
 */
export async function transition(
  ctx: GateContext,
  snap: EffectSnapshot,
  to: State,
  data: JsonObject,
): Promise<{ moved: true; snap: EffectSnapshot } | { moved: false; current: EffectSnapshot }> {
  // `after`: the record this one follows, which a signing writer's signature binds (stores/signing-store.ts).
  const [result] = await ctx.store.append([{ effectId: snap.effect.id, from: snap.state, to, data, after: snap.detail }])
  if (!result!.ok) {
    if (!result!.current) throw new ConflictError(`effect ${snap.effect.id} vanished from the journal while it was ${snap.state}`)
    return { moved: false, current: result!.current }
  }
  await crashPoint(stateCrashPoint(to, snap.state), snap.effect.id)
  const r = result!.record
  // The detail is the record as journaled (signed, scrubbed): what the next record follows.
  return { moved: true, snap: { ...snap, state: to, seq: r.seq, detail: r.data, updatedAt: r.at } }
}

/** The PROPOSED record's data: the whole effect and its target's tier, under the hash chain. */
export function proposal(effect: Effect, tier: Tier): JsonObject {
  return { effect: effectJson(effect), tier }
}
