/**
 * `outbox status`: counts per state, the oldest effect in flight, who waits
 * for an operator, each relay's heartbeat, and the effects a relay refused
 * to send (as its heartbeat reports them: a refusal writes nothing to the
 * journal, relay/send-check.ts).
 */
import type { JsonObject } from '../canonical-json.js'
import { DEFAULTS } from '../config/defaults.js'
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

/**
 * A relay as its heartbeat row shows it: running or draining while its
 * heartbeats come; stopped once it drained and said so; gone when it stopped
 * sending heartbeats without saying so (killed, its host lost) for
 * GONE_AFTER_LEASES lease lengths.
 */
export type RelayState = 'running' | 'draining' | 'stopped' | 'gone'

export interface RelayStatus {
  relay: string
  state: RelayState
  lastSeen: string
  /** Milliseconds since the last heartbeat, by the store's clock. */
  lastSeenAgoMs: number
  /** When this run of the relay started (a relay id reused across restarts keeps one row). */
  startedAt: string
  info: JsonObject
}

/** Heartbeats come every third of a lease: three leases without one is nine missed. */
export const GONE_AFTER_LEASES = 3

/** An effect a relay refused before sending: its row disagreed with its journal, or its authorization did not stand. */
export interface RefusedEffect {
  effectId: string
  relay: string
  target: string
  why: string
  at: string
}

export interface OutboxStatus {
  counts: Record<State, number>
  total: number
  oldestInFlight?: { effectId: string; state: State; since: string; ageMs: number }
  held: WaitingEffect[]
  ambiguous: WaitingEffect[]
  relays: RelayStatus[]
  refused: RefusedEffect[]
}

export async function outboxStatus(store: Store, now: Date): Promise<OutboxStatus> {
  // Counts from one grouped query, then only the effects shown one by one: a
  // million settled effects are counted by the store, never read here.
  const counts = await store.countByState()
  const [held, ambiguous, oldest, relays] = await Promise.all([waiting(store, 'HELD'), waiting(store, 'AMBIGUOUS'), oldestInFlight(store, counts), relaysOf(store)])
  const total = STATES.reduce((n, s) => n + counts[s], 0)
  const status: OutboxStatus = { counts, total, held, ambiguous, relays, refused: relays.flatMap(refusedBy) }
  if (oldest) {
    status.oldestInFlight = { effectId: oldest.effect.id, state: oldest.state, since: oldest.createdAt, ageMs: now.getTime() - Date.parse(oldest.createdAt) }
  }
  return status
}

async function waiting(store: Store, state: State): Promise<WaitingEffect[]> {
  return (await store.list({ states: [state] }))
    .sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : 1))
    .map((s) => ({
      effectId: s.effect.id,
      target: s.effect.target,
      action: s.effect.action,
      thread: s.effect.thread,
      since: s.updatedAt,
      why: state === 'HELD' ? heldWhy(s.detail) : String(s.detail.reason ?? ''),
    }))
}

// The rule and why it holds (a fail-safe hold says what it could not read): the rule's name alone hid that.
function heldWhy(detail: EffectSnapshot['detail']): string {
  const rule = `rule "${String(detail.rule ?? 'policy')}"`
  return typeof detail.reason === 'string' ? `${rule}: ${detail.reason}` : rule
}

/**
 * list() is newest first: the oldest in flight is the last of them, fetched
 * alone with the count as offset. Effects that settle between the count and
 * the read can leave the offset past the end: then count again, once.
 */
async function oldestInFlight(store: Store, counts: Record<State, number>): Promise<EffectSnapshot | undefined> {
  for (let tries = 0, c = counts; ; tries++, c = await store.countByState()) {
    const inFlight = IN_FLIGHT_STATES.reduce((n, s) => n + c[s], 0)
    if (inFlight === 0) return undefined
    const [last] = await store.list({ states: [...IN_FLIGHT_STATES], limit: 1, offset: inFlight - 1 })
    if (last || tries > 0) return last
  }
}

// Heartbeats are written by each relay (store.heartbeat); none recorded is an empty list.
async function relaysOf(store: Store): Promise<RelayStatus[]> {
  return (await store.relays()).map((r) => ({
    relay: r.relay,
    state: relayState(r.info, r.ageMs),
    lastSeen: r.lastSeen,
    lastSeenAgoMs: r.ageMs,
    // The row's started_at is the first start ever under this id; the heartbeat carries this run's.
    startedAt: typeof r.info.startedAt === 'string' ? r.info.startedAt : r.startedAt,
    info: r.info,
  }))
}

export function relayState(info: JsonObject, ageMs: number): RelayState {
  if (info.state === 'stopped') return 'stopped'
  const leaseMs = typeof info.leaseMs === 'number' && info.leaseMs > 0 ? info.leaseMs : DEFAULTS.relayLeaseMs
  if (ageMs > GONE_AFTER_LEASES * leaseMs) return 'gone'
  return info.state === 'draining' ? 'draining' : 'running'
}

function refusedBy(r: RelayStatus): RefusedEffect[] {
  const list = Array.isArray(r.info.refused) ? r.info.refused : []
  return list.flatMap((x) => {
    if (x === null || typeof x !== 'object' || Array.isArray(x) || typeof x.effectId !== 'string') return []
    const reasons = Array.isArray(x.reasons) ? x.reasons.map(String) : []
    return [{ effectId: x.effectId, relay: r.relay, target: String(x.target ?? ''), why: reasons.join('; '), at: String(x.at ?? '') }]
  })
}
