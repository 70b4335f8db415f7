/**
 * Which effect a tool call is, when nothing names it: the MCP proxy's calls,
 * and an agent framework's calls whose own call id does not survive a
 * resume. The effect id comes from what the call is (thread, tool,
 * arguments, key), so the same call made twice on purpose (append the same
 * line twice) looks exactly like a retry. They are told apart by the tool's
 * `dedupe` setting, looking at the last identical
 * call's effect (the first is keyless; the n-th repeat has key `repeat-<n>`):
 *
 * | the last identical call is…          | window (default)              | always | marked              |
 * |--------------------------------------|-------------------------------|--------|---------------------|
 * | none                                 | new                           | new    | new                 |
 * | in flight, HELD or AMBIGUOUS         | the same effect (joins it)    | same   | same                |
 * | COMMITTED                            | same within dedupe_window of  | same   | new, unless marked  |
 * |                                      | its commit, new after         |        | a retry             |
 * | REJECTED or FAILED (nothing was done)| new                           | new    | new                 |
 *
 * A call marked `_meta["interlock/retry"] = true` is always the last
 * identical one; a call with `_meta["interlock/key"]` is always the effect of
 * that key. The trade-off is docs/mcp.md's ("Repeats and retries").
 *
 * A framework that keeps the conversation can say how many identical calls
 * it shows done (`seen`), which tells a repeat from a re-execution whatever
 * the time between: the first that many COMMITTED occurrences are those;
 * this call is the next occurrence that did not come to nothing (REJECTED,
 * FAILED), the same effect if it is journaled (made before a crash, or in
 * flight, HELD, AMBIGUOUS), else a new one. `dedupe` plays no part then.
 */
import { effectId, type EffectInput, type EffectSnapshot } from '../../core/effect.js'

/** As an MCP tool's `dedupe` and `dedupe_window` (core/config/types.ts McpToolConfig). */
export interface Dedupe {
  dedupe: 'window' | 'always' | 'marked'
  /** dedupe = "window": how long after the identical call committed it still counts as a retry. */
  dedupeWindowMs: number
}

export interface Occurrence {
  key?: string
  id: string
  /** The effect already journaled under that id, if any. */
  existing?: EffectSnapshot
  /** In words, for logs and tests: 'new', 'retry', 'joined'... */
  why: string
}

export interface OccurrenceLookup {
  get(id: string): Promise<EffectSnapshot | undefined>
  /** Ids this process has proposed and not yet seen journaled (a call in progress). */
  inProgress(id: string): boolean
  now(): number
}

/** Repeats looked at, at most: the thousandth identical call in one thread is still told apart. */
const MAX_OCCURRENCES = 10_000

export async function chooseOccurrence(
  base: Omit<EffectInput, 'key' | 'premises'>,
  call: { key?: string; retry: boolean; seen?: number },
  dedupe: Dedupe,
  lookup: OccurrenceLookup,
): Promise<Occurrence> {
  if (call.key !== undefined) {
    const id = effectId({ ...base, key: call.key })
    return { key: call.key, id, existing: await lookup.get(id), why: 'the key given' }
  }
  const at = (n: number) => {
    const key = n === 1 ? undefined : `repeat-${n}`
    return { key, id: effectId({ ...base, key }) }
  }
  if (call.seen !== undefined) return afterSeen(call.seen, at, lookup)
  let last: { n: number; id: string; key?: string; snap?: EffectSnapshot } | undefined
  for (let n = 1; n <= MAX_OCCURRENCES; n++) {
    const o = at(n)
    const snap = await lookup.get(o.id)
    if (!snap && !lookup.inProgress(o.id)) break
    last = { n, ...o, snap }
  }
  const fresh = (why: string): Occurrence => {
    const o = at((last?.n ?? 0) + 1)
    return { ...o, why }
  }
  if (!last) return fresh('new')
  const same = (why: string): Occurrence => ({ key: last!.key, id: last!.id, existing: last!.snap, why })
  if (call.retry) return same('marked a retry')
  // Journaled by a call still in progress here: it joins that call.
  if (!last.snap) return same('joined the same call in progress')
  const state = last.snap.state
  if (state === 'REJECTED' || state === 'FAILED') return fresh(`a new call: the last identical one was ${state}, nothing was done`)
  if (state !== 'COMMITTED') return same(`the same effect, still ${state}`)
  if (dedupe.dedupe === 'always') return same('a retry (dedupe = "always")')
  if (dedupe.dedupe === 'marked') return fresh('a new call (dedupe = "marked", not marked a retry)')
  const age = lookup.now() - Date.parse(last.snap.updatedAt)
  return age <= dedupe.dedupeWindowMs ? same('a retry (within dedupe_window of the last identical call)') : fresh('a new call (past dedupe_window of the last identical call)')
}

async function afterSeen(seen: number, at: (n: number) => { key?: string; id: string }, lookup: OccurrenceLookup): Promise<Occurrence> {
  let shown = 0
  for (let n = 1; n <= MAX_OCCURRENCES; n++) {
    const o = at(n)
    const snap = await lookup.get(o.id)
    if (!snap && !lookup.inProgress(o.id)) return { ...o, why: shown === 0 ? 'new' : 'a new call: the conversation shows the identical ones before it done' }
    if (shown < seen) {
      if (snap?.state === 'COMMITTED') shown++
      continue
    }
    if (snap && (snap.state === 'REJECTED' || snap.state === 'FAILED')) continue
    return { ...o, existing: snap, why: snap ? `the same call made again, its effect ${snap.state}` : 'joined the same call in progress' }
  }
  return { ...at(MAX_OCCURRENCES + 1), why: 'new' }
}
