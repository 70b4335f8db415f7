/**
 * The process started after a crash: recovers until the effect is no longer
 * in flight (a search that has not caught up keeps it there, to be asked
 * again), and the journal check every crash case ends with.
 */
import { IN_FLIGHT_STATES, type State } from '../core/lifecycle.js'
import type { Gate } from '../core/gate.js'
import { ChainVerifier } from '../core/stores/record-hash.js'
import type { Store } from '../core/stores/store.js'

export async function recoverUntilSettled(gate: Gate, store: Store, effectId: string, deadline: number): Promise<State | undefined> {
  for (;;) {
    await gate.recover()
    const state = (await store.get(effectId))?.state
    if (!state || !IN_FLIGHT_STATES.includes(state) || Date.now() > deadline) return state
  }
}

/** Every record of every journal chained and hashed, and the effect's own history: the problem, or undefined. */
export async function journalProblem(store: Store, effectId: string): Promise<string | undefined> {
  const verifier = new ChainVerifier()
  try {
    for await (const r of store.records()) verifier.check(r)
    await store.history(effectId)
  } catch (e) {
    return (e as Error).message
  }
  return undefined
}
