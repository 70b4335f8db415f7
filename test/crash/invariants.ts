/**
 * The invariants every crash run is judged by. Ground truth is the target's
 * own count of applications per effect id, never the journal; the journal is
 * only asked where each effect ended up, and whether it still verifies.
 *
 * 1. every effect applied at most once, whatever its tier;
 * 2. COMMITTED ⇒ applied exactly once; FAILED or REJECTED ⇒ not applied;
 * 3. AMBIGUOUS only for tier 3, and only when the outcome really was unknown:
 *    the process crashed while the effect was DISPATCHED (between DISPATCHED
 *    and COMMITTED), or a fault on the wire hid the answer to its request;
 * 4. after recovery plus one reconcile pass, no tier 1 or tier 2 effect is in flight;
 * 5. the journal verifies (every history, and the whole chain).
 * Two more the harness can see directly:
 * 6. nothing reached the target before its DISPATCHED record was durable;
 * 7. an effect whose premise was stale when it was submitted is not applied.
 */
import type { Tier } from '../../src/core/effect.js'
import { IN_FLIGHT_STATES } from '../../src/core/lifecycle.js'
import { ChainVerifier } from '../../src/core/stores/record-hash.js'
import type { Store } from '../../src/core/stores/store.js'

export interface Expectation {
  effectId: string
  tier: Tier
  /** Its premise had changed before it was submitted: the gate must reject it. */
  stale: boolean
}

export interface RunEvidence {
  effects: readonly Expectation[]
  /** The target's own count of applications. */
  applications(effectId: string): number
  /** Effects a crash found DISPATCHED (the window tier 3 cannot close). */
  crashedInWindow: ReadonlySet<string>
  /** Effects a fault on the wire left their sender unsure about. */
  unsure: ReadonlySet<string>
  /** Effects sent while the journal did not have them DISPATCHED. */
  sentEarly: ReadonlySet<string>
}

export async function checkInvariants(store: Store, ev: RunEvidence): Promise<string[]> {
  const violations: string[] = []
  const say = (id: string, what: string) => violations.push(`${id.slice(0, 12)}: ${what}`)
  for (const e of ev.effects) {
    const n = ev.applications(e.effectId)
    const snap = await store.get(e.effectId)
    const state = snap?.state ?? '(never journaled)'
    const tier = `tier ${e.tier}, ${state}`
    if (n > 1) say(e.effectId, `[1] applied ${n} times (${tier})`)
    if (state === 'COMMITTED' && n !== 1) say(e.effectId, `[2] COMMITTED but applied ${n} times (${tier})`)
    if ((state === 'FAILED' || state === 'REJECTED' || !snap) && n !== 0) say(e.effectId, `[2] ${state} but applied ${n} times (tier ${e.tier})`)
    if (state === 'AMBIGUOUS') {
      if (e.tier !== 3) say(e.effectId, `[3] AMBIGUOUS at tier ${e.tier}`)
      else if (!ev.crashedInWindow.has(e.effectId) && !ev.unsure.has(e.effectId)) {
        say(e.effectId, `[3] AMBIGUOUS though no crash fell between DISPATCHED and COMMITTED and no answer was lost`)
      }
    }
    if (e.tier !== 3 && snap && IN_FLIGHT_STATES.includes(snap.state)) say(e.effectId, `[4] still ${state} after recovery and a reconcile pass (${tier})`)
    if (snap) {
      try {
        await store.history(e.effectId)
      } catch (err) {
        say(e.effectId, `[5] history does not verify: ${(err as Error).message}`)
      }
    }
    if (ev.sentEarly.has(e.effectId)) say(e.effectId, `[6] sent to the target before DISPATCHED was durable (${tier})`)
    if (e.stale && n > 0) say(e.effectId, `[7] applied although its premise had changed before dispatch (${tier})`)
  }
  return violations
}

/** [5] for the whole store: every record of every journal, chained and hashed. */
export async function verifyJournal(store: Store): Promise<string[]> {
  const verifier = new ChainVerifier()
  try {
    for await (const r of store.records()) verifier.check(r)
    await store.scanInFlight()
  } catch (err) {
    return [`[5] the journal does not verify: ${(err as Error).message}`]
  }
  return []
}
