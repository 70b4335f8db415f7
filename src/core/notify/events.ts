/**
 * What operators are told about, read from the store itself (not from the
 * memory of whoever wrote it), so that a relay killed between an event and
 * its notice loses nothing: the next pass, by any relay or by
 * reconcile-effects, finds the event again. Each event has a key naming it
 * once and for all (the effect, what happened, the journal record it
 * happened at), which is what makes its notice's effect id the same in every
 * process that computes it.
 */
import type { Effect, EffectSnapshot, Tier } from '../effect.js'
import type { PolicyConfig } from '../config/types.js'
import type { JournalRecord, Store } from '../stores/store.js'

export type NoticeEventKind = 'held' | 'release' | 'ambiguous' | 'ambiguous_waiting' | 'failed' | 'refused'

export interface NoticeEvent {
  kind: NoticeEventKind
  /** Names the event: `<effect id>.<kind>.<seq or time>`. */
  key: string
  /** When it happened (ms since the epoch): the journal record's time; for ambiguous_waiting, when the wait passed. */
  at: number
  effect: Effect
  tier: Tier
  /** held / release: the policy rule holding it, and why. */
  rule?: string
  reason?: string
  /** held / release: the operators whose releases are journaled so far, and how many are needed. */
  releasedBy?: string[]
  needed?: number
  /** ambiguous / failed / refused: what the journal (or the relay) says happened. */
  detail?: string
}

/** The thread notices are journaled in; its own effects are never told about. */
export const NOTIFY_THREAD = 'interlock/notify'

export interface EventScan {
  store: Store
  policy: PolicyConfig
  /** Events older than this (ms since the epoch) are not looked for. */
  since: number
  now: number
  /** For ambiguous_waiting: the waits asked for by the rules. */
  waits: readonly number[]
  /** Which kinds any rule asks for: the others are not looked for. */
  kinds: ReadonlySet<NoticeEventKind>
  /** Most effects read per state per pass (a target down: 10,000 AMBIGUOUS; the next pass reads on). */
  limit: number
  /**
   * A held effect's events by the seq of its last record, kept by the caller
   * between passes: its history is read again only when it has moved on (a
   * pass every few seconds must not read every waiting effect's journal).
   */
  heldSeen?: Map<string, { seq: number; events: NoticeEvent[] }>
}

export async function findEvents(s: EventScan): Promise<NoticeEvent[]> {
  const events: NoticeEvent[] = []
  const wants = (k: NoticeEventKind) => s.kinds.has(k)
  if (wants('held') || wants('release')) {
    const held = await s.store.list({ states: ['HELD'], limit: s.limit })
    for (const snap of held) {
      if (snap.effect.thread === NOTIFY_THREAD) continue
      let seen = s.heldSeen?.get(snap.effect.id)
      if (seen?.seq !== snap.seq) {
        seen = { seq: snap.seq, events: heldEvents(snap, await s.store.history(snap.effect.id), s) }
        s.heldSeen?.set(snap.effect.id, seen)
      }
      events.push(...seen.events.filter((e) => wants(e.kind) && e.at >= s.since))
    }
    // Released, denied or gone: nothing more to keep of them.
    if (s.heldSeen) {
      const still = new Set(held.map((h) => h.effect.id))
      for (const id of s.heldSeen.keys()) if (!still.has(id)) s.heldSeen.delete(id)
    }
  }
  if (wants('ambiguous') || wants('ambiguous_waiting')) {
    for (const snap of await s.store.list({ states: ['AMBIGUOUS'], limit: s.limit })) {
      if (snap.effect.thread === NOTIFY_THREAD) continue
      const at = Date.parse(snap.updatedAt)
      const detail = reasonOf(snap)
      if (wants('ambiguous') && at >= s.since) events.push(base(snap, 'ambiguous', `${snap.seq}`, at, detail))
      if (wants('ambiguous_waiting')) {
        for (const wait of s.waits) {
          if (at + wait <= s.now && at + wait >= s.since) events.push(base(snap, 'ambiguous_waiting', `${snap.seq}.${wait}`, at + wait, detail))
        }
      }
    }
  }
  if (wants('failed')) {
    // FAILED is for good: only those that failed lately (created since the horizon, failed since it too).
    for (const snap of await s.store.list({ states: ['FAILED'], since: new Date(s.since).toISOString(), limit: s.limit })) {
      const at = Date.parse(snap.updatedAt)
      if (snap.effect.thread !== NOTIFY_THREAD && at >= s.since) events.push(base(snap, 'failed', `${snap.seq}`, at, reasonOf(snap)))
    }
  }
  if (wants('refused')) events.push(...(await refusedEvents(s)))
  return events
}

function base(snap: Pick<EffectSnapshot, 'effect' | 'tier'>, kind: NoticeEventKind, mark: string, at: number, detail?: string): NoticeEvent {
  return { kind, key: `${snap.effect.id}.${kind}.${mark}`, at, effect: snap.effect, tier: snap.tier, ...(detail === undefined ? {} : { detail }) }
}

function reasonOf(snap: EffectSnapshot): string | undefined {
  const r = snap.detail.reason ?? snap.detail.error
  return typeof r === 'string' ? r : undefined
}

/** The HELD run the effect is in now: the record that held it, and each release journaled since. */
function heldEvents(snap: EffectSnapshot, history: JournalRecord[], s: EventScan): NoticeEvent[] {
  let start = history.length - 1
  while (start > 0 && history[start - 1]!.state === 'HELD') start--
  const run = history.slice(start).filter((r) => r.state === 'HELD')
  const first = run[0]
  if (!first) return []
  const rule = typeof first.data.rule === 'string' ? first.data.rule : undefined
  const reason = typeof first.data.reason === 'string' ? first.data.reason : undefined
  const needed = s.policy.rules.find((r) => r.name === rule)?.quorum ?? 1
  const held = { ...base(snap, 'held', `${first.seq}`, Date.parse(first.at)), ...(rule ? { rule } : {}), ...(reason ? { reason } : {}), releasedBy: [], needed }
  const events: NoticeEvent[] = [held]
  const releasedBy: string[] = []
  for (const r of run.slice(1)) {
    const operator = releaseOperator(r)
    if (!operator) continue
    releasedBy.push(operator)
    events.push({ ...base(snap, 'release', `${r.seq}`, Date.parse(r.at)), ...(rule ? { rule } : {}), ...(reason ? { reason } : {}), releasedBy: [...releasedBy], needed })
  }
  return events
}

/** The operator of a release a HELD → HELD record carries, as the CLI journals it. */
function releaseOperator(r: JournalRecord): string | undefined {
  const release = (r.data.release ?? r.data.releases) as unknown
  const one = Array.isArray(release) ? release[release.length - 1] : release
  const statement = (one as { statement?: { operator?: unknown } } | undefined)?.statement
  return typeof statement?.operator === 'string' ? statement.operator : undefined
}

/** Refusals the relays' heartbeats carry: a refusal writes no transition, so that is where it is kept. */
async function refusedEvents(s: EventScan): Promise<NoticeEvent[]> {
  const events: NoticeEvent[] = []
  for (const relay of await s.store.relays()) {
    const refusals = (relay.info as { refused?: unknown }).refused
    if (!Array.isArray(refusals)) continue
    for (const r of refusals as Array<{ effectId?: unknown; kind?: unknown; reasons?: unknown; at?: unknown }>) {
      if (typeof r.effectId !== 'string' || typeof r.at !== 'string') continue
      const at = Date.parse(r.at)
      if (!(at >= s.since)) continue
      const snap = await s.store.get(r.effectId)
      if (!snap || snap.effect.thread === NOTIFY_THREAD) continue
      const reasons = Array.isArray(r.reasons) ? r.reasons.filter((x): x is string => typeof x === 'string').join('; ') : ''
      events.push(base(snap, 'refused', `${at}`, at, `${relay.relay} refused it (${String(r.kind)}): ${reasons}`))
    }
  }
  return events
}
