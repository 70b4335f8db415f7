/**
 * `outbox list`: effects by state, target, thread and creation time, newest
 * first, a page at a time. The store filters by state, target and thread;
 * the time window and the page are cut here.
 */
import type { EffectSnapshot } from '../effect.js'
import { UsageError } from '../errors.js'
import type { State } from '../lifecycle.js'
import type { Store } from '../stores/store.js'

export interface ListQuery {
  states?: State[]
  target?: string
  thread?: string
  /** ISO-8601: created at or after. */
  since?: string
  /** ISO-8601: created before. */
  until?: string
  limit: number
  /** 1-based. */
  page: number
}

export interface ListedEffect {
  effectId: string
  state: State
  thread: string
  target: string
  action: string
  tier: number
  createdAt: string
  updatedAt: string
  detail: EffectSnapshot['detail']
}

export interface ListPage {
  effects: ListedEffect[]
  page: number
  limit: number
  total: number
  pages: number
}

export function parseTime(text: string, flag: string): string {
  const t = Date.parse(text)
  if (Number.isNaN(t)) throw new UsageError(`${flag} ${JSON.stringify(text)} is not a date or time`, { hint: `Use ISO-8601, e.g. ${flag} 2026-01-31 or ${flag} 2026-01-31T12:00:00Z.` })
  return new Date(t).toISOString()
}

export async function listEffects(store: Store, q: ListQuery): Promise<ListPage> {
  const all = await store.list({ states: q.states, target: q.target, thread: q.thread })
  const inWindow = all.filter((s) => (q.since === undefined || s.createdAt >= q.since) && (q.until === undefined || s.createdAt < q.until))
  const start = (q.page - 1) * q.limit
  return {
    effects: inWindow.slice(start, start + q.limit).map(listed),
    page: q.page,
    limit: q.limit,
    total: inWindow.length,
    pages: Math.max(1, Math.ceil(inWindow.length / q.limit)),
  }
}

export function listed(s: EffectSnapshot): ListedEffect {
  return {
    effectId: s.effect.id,
    state: s.state,
    thread: s.effect.thread,
    target: s.effect.target,
    action: s.effect.action,
    tier: s.tier,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    detail: s.detail,
  }
}
