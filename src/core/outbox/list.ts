/**
 * `outbox list`: effects by state, target, thread and creation time, newest
 * first, a page at a time. The store filters and pages (a shared outbox can
 * hold millions); one effect more than the page is read to know whether
 * another page follows, so no count of the whole outbox is ever needed.
 */
import type { EffectSnapshot } from '../effect.js'
import { UsageError } from '../errors.js'
import { STATES, type State } from '../lifecycle.js'
import type { Store } from '../stores/store.js'

export interface ListQuery {
  states?: State[]
  target?: string
  thread?: string
  /** Only effects asked for by this principal (the MCP gateway's callers). */
  principal?: string
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
  /** Who asked, when the effect says (the MCP gateway's callers). */
  principal?: string
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
  /** Whether page + 1 has effects. */
  more: boolean
}

/** `--state held` is `--state HELD`: states are matched in any case, and an unknown one is a usage error naming them all. */
export function parseStates(texts: readonly string[]): State[] {
  return texts.map((text) => {
    const state = STATES.find((s) => s === text.trim().toUpperCase())
    if (!state) throw new UsageError(`--state ${JSON.stringify(text)} is not a state`, { hint: `Use one of ${STATES.join(', ')} (in any case).` })
    return state
  })
}

export function parseTime(text: string, flag: string): string {
  const t = Date.parse(text)
  if (Number.isNaN(t)) throw new UsageError(`${flag} ${JSON.stringify(text)} is not a date or time`, { hint: `Use ISO-8601, e.g. ${flag} 2026-01-31 or ${flag} 2026-01-31T12:00:00Z.` })
  return new Date(t).toISOString()
}

export async function listEffects(store: Store, q: ListQuery): Promise<ListPage> {
  const rows = await store.list({
    states: q.states,
    target: q.target,
    thread: q.thread,
    principal: q.principal,
    since: q.since,
    until: q.until,
    limit: q.limit + 1,
    offset: (q.page - 1) * q.limit,
  })
  return { effects: rows.slice(0, q.limit).map(listed), page: q.page, limit: q.limit, more: rows.length > q.limit }
}

export function listed(s: EffectSnapshot): ListedEffect {
  const e: ListedEffect = {
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
  if (s.effect.principal !== undefined) e.principal = s.effect.principal
  return e
}
