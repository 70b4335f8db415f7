/** What the lifecycle steps need, injected once by the Gate. */
import type { JsonObject } from './canonical-json.js'
import { effectJson, type Effect, type EffectSnapshot, type Tier } from './effect.js'
import { ConflictError, NotFoundError } from './errors.js'
import { crashPoint, stateCrashPoint } from './crash-points.js'
import type { State } from './lifecycle.js'
import type { Policy } from './policy.js'
import type { AppendRequest, Store } from './stores/store.js'
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

/** One state change: the state entered and the record's data. */
export interface Step {
  to: State
  data: JsonObject
}

export type Moved = { moved: true; snap: EffectSnapshot } | { moved: false; current: EffectSnapshot }

/**
 * Makes one state change durable, then passes its crash point. Returns the new
 * snapshot, or the current one when another writer moved the effect first.
 */
export function transition(ctx: GateContext, snap: EffectSnapshot, to: State, data: JsonObject): Promise<Moved> {
  return transitions(ctx, snap, [{ to, data }])
}

/**
 * Makes several state changes of one effect durable as one commit (a chain:
 * Store.append), each its own record, then passes the crash point of the
 * last: between records of one commit there is no boundary to crash at.
 * All or nothing: when another writer moved the effect first, none is made.
 */
export async function transitions(ctx: GateContext, snap: EffectSnapshot, steps: readonly Step[]): Promise<Moved> {
  // `after`: the record the first one follows, which a signing writer's signature binds (stores/signing-store.ts).
  const first: AppendRequest = { effectId: snap.effect.id, from: snap.state, to: steps[0]!.to, data: steps[0]!.data, after: snap.detail }
  const results = await ctx.store.append(chain(first, steps.slice(1)))
  const last = results.at(-1)!
  if (!last.ok) {
    if (!last.current) throw new ConflictError(`effect ${snap.effect.id} vanished from the journal while it was ${snap.state}`)
    return { moved: false, current: last.current }
  }
  await crashPoint(stateCrashPoint(last.record.state, results.length > 1 ? steps.at(-2)!.to : snap.state), snap.effect.id)
  // The detail is the record as journaled (signed, scrubbed): what the next record follows.
  return { moved: true, snap: { ...snap, state: last.record.state, seq: last.record.seq, detail: last.record.data, updatedAt: last.record.at } }
}

/** `first`, then each step chained to the one before it (Store.append: all or nothing). */
export function chain(first: AppendRequest, steps: readonly Step[]): AppendRequest[] {
  const requests = [first]
  for (const s of steps) requests.push({ effectId: first.effectId, from: requests.at(-1)!.to, to: s.to, data: s.data, chained: true })
  return requests
}

/** The PROPOSED record's data: the whole effect and its target's tier, under the hash chain. */
export function proposal(effect: Effect, tier: Tier): JsonObject {
  return { effect: effectJson(effect), tier }
}
