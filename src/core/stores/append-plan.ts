/**
 * What an append writes, decided in memory from what the store read inside
 * its transaction. Both stores share this, so compare-and-set, the lifecycle
 * check and the hash chain behave the same whatever the driver; a store only
 * reads the current rows, calls planAppend, and writes the plan.
 */
import { canonicalJson, type JsonObject } from '../canonical-json.js'
import { effectJson, type Effect, type EffectSnapshot } from '../effect.js'
import { InputError } from '../errors.js'
import { assertTransition } from '../lifecycle.js'
import { recordHash } from './record-hash.js'
import { GENESIS_HASH, type AppendRequest, type AppendResult, type JournalRecord, type Lease } from './store.js'

export interface ChainHead {
  seq: number
  hash: string
}

/** A record to insert, with the exact canonical text its hash covers. */
export interface PlannedRecord {
  record: JournalRecord
  dataText: string
}

/** An effect row to write: its final state after the batch. */
export interface PlannedEffect {
  snapshot: EffectSnapshot
  /** The effect's last_seq before the batch (null when it is new): the SQL compare-and-set guard. */
  previousSeq: number | null
  /** The canonical text of the snapshot's detail (= the last record's data). */
  detailText: string
  /** A new effect's canonical JSON (effectJson), the text its proposal's record already holds. */
  effectText?: string
}

export interface AppendPlan {
  results: AppendResult[]
  records: PlannedRecord[]
  effects: PlannedEffect[]
  /** New heads of the journals written to. */
  heads: Map<string, ChainHead>
}

/**
 * The caller's bugs, found before any I/O (see Store.append): an illegal
 * `from → to`, or a proposal without its effect and tier.
 */
export function validateAppendRequests(requests: readonly AppendRequest[]): void {
  for (const [i, r] of requests.entries()) {
    assertTransition(r.from, r.to, r.effectId)
    if (r.chained) {
      const before = requests[i - 1]
      if (!before || before.effectId !== r.effectId || before.to !== r.from) {
        throw new InputError(`a chained append of ${r.from} → ${r.to} for effect ${r.effectId} does not continue the request before it`)
      }
    }
    if (r.from === null) {
      if (!r.effect || r.tier === undefined) {
        throw new InputError(`proposing effect ${r.effectId} needs its effect and tier`)
      }
      if (r.effect.id !== r.effectId) {
        throw new InputError(`proposal for ${r.effectId} carries effect ${r.effect.id}`)
      }
    }
  }
}

/** The journal each request writes to, when it can be known before reading (a proposal names its thread). */
export function proposedJournal(r: AppendRequest): string | undefined {
  return r.effect?.thread
}

/**
 * The data a request's record carries: a proposal's record also holds the
 * effect and its tier, so a journal alone tells what was proposed. Depends on
 * the request only (a proposal that passes compare-and-set found no effect),
 * so a store may compute it before it reads anything.
 */
export function recordData(req: AppendRequest): JsonObject {
  return req.from === null ? { ...req.data, effect: effectJson(req.effect as Effect), tier: req.tier! } : req.data
}

/** A request's record data, its canonical text, and for a proposal the effect's canonical text. */
export interface RequestTexts {
  data: JsonObject
  dataText: string
  /** Proposals only: what the effect row stores, the same bytes the record's text holds. */
  effectText?: string
}

/**
 * recordData and its canonical text. A proposal's effect is serialised once,
 * for its record and its row: when the record data is exactly `{ effect, tier }`
 * its text is those two members in key order around the effect's text.
 */
export function requestTexts(req: AppendRequest): RequestTexts {
  const data = recordData(req)
  if (req.from !== null) return { data, dataText: canonicalJson(data) }
  const effectText = canonicalJson(effectJson(req.effect as Effect))
  const dataText = onlyEffectAndTier(req.data) ? `{"effect":${effectText},"tier":${JSON.stringify(req.tier!)}}` : canonicalJson(data)
  return { data, dataText, effectText }
}

/**
 * @param current effects as read inside the transaction (only those in `heads`' journals count)
 * @param heads   heads of the journals locked for this transaction
 * @param at      the transaction's timestamp, from the store's clock
 * @param leases  current leases of the effects, read (and locked) in the same transaction
 */
export function planAppend(
  requests: readonly AppendRequest[],
  current: ReadonlyMap<string, EffectSnapshot>,
  heads: ReadonlyMap<string, ChainHead>,
  at: string,
  leases?: ReadonlyMap<string, Lease>,
): AppendPlan {
  const working = new Map<string, EffectSnapshot>()
  const previousSeq = new Map<string, number | null>()
  const newHeads = new Map<string, ChainHead>()
  const results: AppendResult[] = []
  const records: PlannedRecord[] = []
  const detailTexts = new Map<string, string>()
  const effectTexts = new Map<string, string>()

  const lookup = (id: string): EffectSnapshot | undefined => {
    const w = working.get(id)
    if (w) return w
    const c = current.get(id)
    // An effect in a journal this transaction did not lock was created by a
    // concurrent writer after we looked: for this batch it does not exist yet.
    return c && heads.has(c.effect.thread) ? c : undefined
  }

  for (const [i, req] of requests.entries()) {
    const before = results.at(-1)
    // A chain is all or nothing: a request chained to one that lost loses with it.
    if (req.chained && before && !before.ok) {
      results.push({ ok: false, current: before.current && structuredClone(before.current) })
      continue
    }
    const snap = lookup(req.effectId)
    const state = snap ? snap.state : null
    // Compare-and-set: the writer's belief must be the truth; a proposal must find nothing.
    // Fencing: a relay's write counts only while the lease it names is the effect's lease now.
    // A chain is decided at its first request, fencing included: a request chained on under a lease the
    // effect no longer holds fails the whole chain, never leaving the requests before it written alone.
    if (state !== req.from || !chainHoldsLeases(requests, i, leases)) {
      results.push({ ok: false, current: snap ? structuredClone(snap) : null })
      continue
    }
    const effect = snap ? snap.effect : (req.effect as Effect)
    const tier = snap ? snap.tier : req.tier!
    const journal = effect.thread
    const head = newHeads.get(journal) ?? heads.get(journal)
    if (!head) throw new Error(`planAppend: journal ${journal} was not locked`)
    const { data, dataText, effectText } = requestTexts(req)
    if (effectText !== undefined) effectTexts.set(req.effectId, effectText)
    const seq = head.seq + 1
    const base = { journal, seq, effectId: req.effectId, state: req.to, at, data, prevHash: head.hash }
    const record: JournalRecord = { ...base, hash: recordHash({ ...base, data: dataText }) }
    records.push({ record, dataText })
    newHeads.set(journal, { seq, hash: record.hash })
    if (!previousSeq.has(req.effectId)) previousSeq.set(req.effectId, snap ? snap.seq : null)
    working.set(req.effectId, {
      effect,
      tier,
      state: req.to,
      seq,
      detail: data,
      createdAt: snap ? snap.createdAt : at,
      updatedAt: at,
    })
    detailTexts.set(req.effectId, dataText)
    results.push({ ok: true, record })
  }

  const effects: PlannedEffect[] = [...working.entries()].map(([id, snapshot]) => ({
    snapshot,
    previousSeq: previousSeq.get(id) ?? null,
    detailText: detailTexts.get(id)!,
    effectText: effectTexts.get(id),
  }))
  return { results, records, effects, heads: newHeads }
}

/** True when a proposal's record data is exactly `{ effect, tier }` (the gate proposes with those two keys, which recordData overwrites). */
function onlyEffectAndTier(data: JsonObject): boolean {
  for (const k in data) if (k !== 'effect' && k !== 'tier') return false
  return true
}

/** Whether every request of the chain starting at `first` that names a lease names the effect's lease now (leases do not change within a batch). */
function chainHoldsLeases(requests: readonly AppendRequest[], first: number, leases: ReadonlyMap<string, Lease> | undefined): boolean {
  for (let i = first; i < requests.length && (i === first || requests[i]!.chained); i++) {
    const r = requests[i]!
    if (r.lease && !sameLease(r.lease, leases?.get(r.effectId))) return false
  }
  return true
}

function sameLease(a: Lease, b: Lease | undefined): boolean {
  return b !== undefined && a.relay === b.relay && a.token === b.token
}

export { GENESIS_HASH }
export { effectJson }
