/** `outbox status`: counts per state, the oldest effect in flight, who waits for an operator, each relay's heartbeat. */
import type { JsonObject } from '../canonical-json.js'
import type { EffectSnapshot } from '../effect.js'
import { IN_FLIGHT_STATES, STATES, type State } from '../lifecycle.js'
import type { Store } from '../stores/store.js'

export interface WaitingEffect {
  effectId: string
  target: string
  action: string
  thread: string
  since: string
  /** HELD: the rule; AMBIGUOUS: the reason. */
  why: string
}

export interface RelayStatus {
  relay: string
  lastSeen: string
  startedAt: string
  info: JsonObject
}

export interface OutboxStatus {
  counts: Record<State, number>
  total: number
  oldestInFlight?: { effectId: string; state: State; since: string; ageMs: number }
  held: WaitingEffect[]
  ambiguous: WaitingEffect[]
  relays: RelayStatus[]
}

export async function outboxStatus(store: Store, now: Date): Promise<OutboxStatus> {
  const all = await store.list()
  const counts = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<State, number>
  let oldest: EffectSnapshot | undefined
  for (const s of all) {
    counts[s.state]++
    if (IN_FLIGHT_STATES.includes(s.state) && (!oldest || s.createdAt < oldest.createdAt)) oldest = s
  }
  const waiting = (state: State) =>
    all
      .filter((s) => s.state === state)
      .sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : 1))
      .map((s) => ({
        effectId: s.effect.id,
        target: s.effect.target,
        action: s.effect.action,
        thread: s.effect.thread,
        since: s.updatedAt,
        why: String(state === 'HELD' ? (s.detail.rule ?? '') : (s.detail.reason ?? '')),
      }))
  const status: OutboxStatus = { counts, total: all.length, held: waiting('HELD'), ambiguous: waiting('AMBIGUOUS'), relays: await relaysOf(store) }
  if (oldest) {
    status.oldestInFlight = { effectId: oldest.effect.id, state: oldest.state, since: oldest.createdAt, ageMs: now.getTime() - Date.parse(oldest.createdAt) }
  }
  return status
}

// Heartbeats are written by each relay (store.heartbeat); none recorded is an empty list.
async function relaysOf(store: Store): Promise<RelayStatus[]> {
  return (await store.relays()).map((r) => ({ relay: r.relay, lastSeen: r.lastSeen, startedAt: r.startedAt, info: r.info }))
}
