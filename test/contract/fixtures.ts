/** Small builders shared by the store tests. */
import type { Clock } from '../../src/core/clock.js'
import { toEffect, type Effect, type Tier } from '../../src/core/effect.js'
import type { State } from '../../src/core/lifecycle.js'
import type { AppendRequest, AppendResult, JournalRecord, Store } from '../../src/core/stores/store.js'

/** A clock that moves 1 ms per reading, so every record has its own time and "newest first" is well defined. */
export function tickingClock(start = Date.UTC(2030, 0, 1)): Clock {
  let t = start
  return { now: () => new Date(t++) }
}

export function effect(thread: string, n: number | string, target = 'svc'): Effect {
  return toEffect({ thread, target, action: 'do', args: { n, note: 'é' }, premises: { seen: n } })
}

export function propose(e: Effect, tier: Tier = 2, data = {}): AppendRequest {
  return { effectId: e.id, from: null, to: 'PROPOSED', data, effect: e, tier }
}

export function move(e: Effect, from: State, to: State, data = {}): AppendRequest {
  return { effectId: e.id, from, to, data }
}

/** The usual path to each state, as the list of steps after PROPOSED. */
export const PATH: Record<State, State[]> = {
  PROPOSED: [],
  HELD: ['HELD'],
  AUTHORIZED: ['AUTHORIZED'],
  DISPATCHED: ['AUTHORIZED', 'DISPATCHED'],
  COMMITTED: ['AUTHORIZED', 'DISPATCHED', 'COMMITTED'],
  REJECTED: ['REJECTED'],
  FAILED: ['AUTHORIZED', 'DISPATCHED', 'FAILED'],
  AMBIGUOUS: ['AUTHORIZED', 'DISPATCHED', 'AMBIGUOUS'],
}

/** Proposes `e` and walks it to `state`, one append per step; returns the last result. */
export async function drive(store: Store, e: Effect, state: State, tier: Tier = 2): Promise<AppendResult> {
  let result = (await store.append([propose(e, tier)]))[0]!
  let from: State = 'PROPOSED'
  for (const to of PATH[state]) {
    result = (await store.append([move(e, from, to, { step: to })]))[0]!
    from = to
  }
  return result
}

export function ok(result: AppendResult | undefined): JournalRecord {
  if (!result?.ok) throw new Error(`expected an ok append, got ${JSON.stringify(result)}`)
  return result.record
}

export async function allRecords(store: Store): Promise<JournalRecord[]> {
  const out: JournalRecord[] = []
  for await (const r of store.records()) out.push(r)
  return out
}
