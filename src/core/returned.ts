/**
 * The return edge, DISPATCHED → AUTHORIZED (lifecycle.ts): the target said it
 * definitely did not apply the effect, and either asked for a wait longer than
 * the gate waits in place (`max_wait_ms`) or said the request must start over
 * ('not-applied', e.g. an expired idempotency key). The record carries
 * `{ returned: <why>, notBefore?: <ISO time> }`.
 *
 * Why an edge and not a long sleep: a sleeping dispatch holds a relay's
 * concurrency slot and lease, or an inline caller's `submit`, for as long as
 * the service asks (GitHub's rate-limit reset can be an hour away). Returned,
 * the effect waits in the journal instead: nobody sends it before
 * `notBefore` (advance.ts checks, recovery counts it as too recent, a relay
 * parks its lease until then), and when it goes again it takes the normal
 * path from AUTHORIZED, so its premises are checked before DISPATCHED is
 * written again. Never taken after an unknown outcome: an effect that may
 * have landed stays DISPATCHED for recovery's rules by tier.
 */
import type { JsonObject } from './canonical-json.js'
import type { EffectSnapshot } from './effect.js'

/** The data of a DISPATCHED → AUTHORIZED record. */
export function returnedData(reason: string, notBeforeMs?: number): JsonObject {
  return notBeforeMs === undefined ? { returned: reason } : { returned: reason, notBefore: new Date(notBeforeMs).toISOString() }
}

/** Whether the snapshot's last record is a return. */
export function isReturned(snap: Pick<EffectSnapshot, 'state' | 'detail'>): boolean {
  return snap.state === 'AUTHORIZED' && typeof snap.detail?.returned === 'string'
}

/** Epoch ms before which a returned effect must not be sent, if its return named one. */
export function notBeforeOf(snap: Pick<EffectSnapshot, 'state' | 'detail'>): number | undefined {
  if (!isReturned(snap) || typeof snap.detail.notBefore !== 'string') return undefined
  const at = Date.parse(snap.detail.notBefore)
  return Number.isNaN(at) ? undefined : at
}

/** True while a returned effect's notBefore lies ahead of `nowMs`. */
export function waitsUntilLater(snap: Pick<EffectSnapshot, 'state' | 'detail'>, nowMs: number): boolean {
  const at = notBeforeOf(snap)
  return at !== undefined && at > nowMs
}
