/**
 * The effect as its journal holds it, and where the mutable `effects` row
 * departs from it.
 *
 * The PROPOSED record carries the whole effect and its tier under the hash
 * chain; operators' releases sign the digest of exactly those args and
 * premises. The `effects` row is a projection kept for fast reads, and anyone
 * with write access to the database can edit it without touching the chain.
 * So what is sent is what the PROPOSED record says, and a row that says
 * something else is a tampered (or corrupted) row: reported, never trusted
 * (docs/design.md, "The trust boundary": what was signed is exactly what is sent).
 */
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import { effectId, type Effect, type EffectSnapshot, type Tier } from '../effect.js'
import type { JournalRecord } from '../stores/store.js'

export type JournaledProposal = { ok: true; effect: Effect; tier: Tier } | { ok: false; reason: string }

/** The effect and tier the history's PROPOSED record holds, its id recomputed from its args. */
export function journaledProposal(history: readonly JournalRecord[]): JournaledProposal {
  const first = history[0]
  if (!first) return { ok: false, reason: 'its journal holds no record of it' }
  if (first.state !== 'PROPOSED') return { ok: false, reason: `its first journal record is ${first.state}, not PROPOSED` }
  const e = first.data.effect as JsonObject | undefined
  const tier = first.data.tier
  if (!isObject(e) || (tier !== 1 && tier !== 2 && tier !== 3)) return { ok: false, reason: 'its PROPOSED record holds no well-formed effect and tier' }
  const { id, thread, target, action, args, premises, key, principal, trace } = e
  if (
    typeof id !== 'string' ||
    typeof thread !== 'string' ||
    typeof target !== 'string' ||
    typeof action !== 'string' ||
    !isObject(args) ||
    !isObject(premises) ||
    (key !== undefined && typeof key !== 'string') ||
    (principal !== undefined && typeof principal !== 'string') ||
    (trace !== undefined && !isObject(trace))
  ) {
    return { ok: false, reason: 'its PROPOSED record holds no well-formed effect' }
  }
  const effect: Effect = { id, thread, target, action, args, premises }
  if (key !== undefined) effect.key = key
  if (principal !== undefined) effect.principal = principal
  if (trace !== undefined) effect.trace = trace as unknown as NonNullable<Effect['trace']>
  if (id !== first.effectId) return { ok: false, reason: `its PROPOSED record names effect ${first.effectId} but carries effect ${id}` }
  // The id is a hash of what the effect is: args rewritten in the journal no longer hash to it.
  if (effectId(effect) !== id) return { ok: false, reason: `its PROPOSED record's args, target, action, thread, key or principal do not hash to its id ${id}` }
  return { ok: true, effect, tier }
}

/**
 * Every way the row departs from its journal: the effect's fields against the
 * PROPOSED record, its state and last seq against the last record. Names each
 * field, never its value (args may hold what should not reach a log).
 *
 * `settled`: nobody may have written between reading the row and reading the
 * history (a relay holding the effect's lease), so any difference in state or
 * last seq is an edit. Otherwise (an operator's look, while others may append)
 * a later last record is a race, not an edit: the state is compared only when
 * both name the same record.
 */
export function rowDisagreements(row: EffectSnapshot, proposal: { effect: Effect; tier: Tier }, last: JournalRecord, settled = true): string[] {
  const out = rowFieldDisagreements(row, proposal)
  if (row.state !== last.state && (settled || row.seq === last.seq)) out.push(`state (row ${row.state}, journal ${last.state})`)
  if (row.seq !== last.seq && settled) out.push(`last seq (row ${row.seq}, journal ${last.seq})`)
  return out
}

/** The fields of the row's effect and its tier that depart from the PROPOSED record (names, never values). */
export function rowFieldDisagreements(row: Pick<EffectSnapshot, 'effect' | 'tier'>, proposal: { effect: Effect; tier: Tier }): string[] {
  const out: string[] = []
  const j = proposal.effect
  const r = row.effect
  if (r.id !== j.id) out.push('id')
  for (const f of ['thread', 'target', 'action', 'key', 'principal'] as const) if (r[f] !== j[f]) out.push(f)
  if (!sameJson(r.args, j.args)) out.push('args')
  if (!sameJson(r.trace ?? null, j.trace ?? null)) out.push('trace')
  if (!sameJson(r.premises, j.premises)) out.push('premises')
  if (row.tier !== proposal.tier) out.push(`tier (row ${row.tier}, journal ${proposal.tier})`)
  return out
}

function sameJson(a: unknown, b: unknown): boolean {
  try {
    return canonicalJson(a as JsonObject) === canonicalJson(b as JsonObject)
  } catch {
    // Not JSON at all (a row edited into something canonicalJson refuses): not the journaled value.
    return false
  }
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/** What an operator is shown and signs: the journal's effect, and how the row (read apart from the history) departs from it, or why the journal holds none. */
export type JournalView = { ok: true; effect: Effect; tier: Tier; rowDisagrees: string[] } | { ok: false; reason: string }

export function journalView(row: EffectSnapshot, history: readonly JournalRecord[]): JournalView {
  const p = journaledProposal(history)
  if (!p.ok) return p
  return { ok: true, effect: p.effect, tier: p.tier, rowDisagrees: rowDisagreements(row, p, history.at(-1)!, false) }
}
