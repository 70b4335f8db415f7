/**
 * The journals bench/recovery reads: what relays leave in a shared store
 * after a long run. `records` journal records over `journals` journals (agent
 * threads), each a chain of effects proposed by agents and driven by a relay
 * holding the relay key, exactly as the relay writes them: the agent's
 * PROPOSED unsigned, then AUTHORIZED and DISPATCHED (one commit), then
 * COMMITTED; records hash-chained with the stores' own recordHash. With
 * `form: 'seals'` (as relays write now) each relay commit of a group is
 * sealed once (crypto/seal.ts: one seal over the group's records, a relay's
 * batch); with `form: 'records'` (as they wrote before seals) each record is
 * signed and COMMITTED carries a signed receipt. Effects go in interleaved
 * groups, as agents working side by side: their proposals, then the relay's
 * dispatches, then the outcomes.
 *
 * Among them `inFlight` effects are left open, one kind each by turn:
 * DISPATCHED (tier 1, 2 or 3: re-applied, queried, marked AMBIGUOUS), PROPOSED,
 * AUTHORIZED (returned by its target, its wait over), HELD (a large refund
 * the policy holds, no release yet), AMBIGUOUS. Most sit at the end of their
 * journal (the crash just happened); one in ten is old, a tenth of the way
 * into its journal's history (an effect left waiting for an operator, or
 * stranded long ago), so a reading that starts at the oldest open effect
 * reads nearly everything.
 *
 * Pure and deterministic per journal: generate-worker.ts runs it in worker
 * threads (signing is most of the cost).
 */
import { canonicalJson, type JsonObject } from '../../src/core/canonical-json.js'
import { followsOf } from '../../src/core/crypto/record-signature.js'
import type { KeyPair } from '../../src/core/crypto/keys.js'
import { toEffect, type Effect, type Tier } from '../../src/core/effect.js'
import type { State } from '../../src/core/lifecycle.js'
import { relaySigner } from '../../src/core/relay/relay-signer.js'
import { sealer } from '../../src/core/crypto/seal.js'
import { requestTexts } from '../../src/core/stores/append-plan.js'
import { recordHash } from '../../src/core/stores/record-hash.js'
import { GENESIS_HASH } from '../../src/core/stores/store.js'

export interface Plan {
  records: number
  journals: number
  inFlight: number
  /** How the relay signed: one seal per commit (now, the default) or each record (before seals). */
  form?: 'seals' | 'records'
}

export const RELAY = 'relay-bench'
export const TIERS: Readonly<Record<string, Tier>> = { payments: 1, orders: 2, mail: 3 }
/** The policy the journals were written under: refunds above 500.00 USD wait for one operator. */
export const RULE = { name: 'large-refunds', target: 'payments', when: [{ arg: 'amount', above: '500.00', currency: 'USD' }], quorum: 1, releaseTtlMs: 3_600_000 }

export type OpenKind = 'dispatched' | 'proposed' | 'returned' | 'held' | 'ambiguous'
/** One in ten of each: 6 DISPATCHED (two per tier), then the rest. */
const KINDS: OpenKind[] = ['dispatched', 'dispatched', 'dispatched', 'dispatched', 'dispatched', 'dispatched', 'proposed', 'returned', 'held', 'ambiguous']
const GROUP = 8
const DAY = 86_400_000

/** journal, seq, effect_id, state, at, data, prev_hash, hash */
export type RecordRow = [string, number, string, string, string, string, string, string]
/** id, journal, target, action, tier, effect, state, last_seq, detail, created_at, updated_at, settled_at */
export type EffectRow = [string, string, string, string, number, string, string, number, string, string, string, string | null]

export interface JournalRows {
  journal: string
  records: RecordRow[]
  effects: EffectRow[]
  head: { seq: number; hash: string }
  /** The seals (form 'seals'): [at, JSON of the stored seal]. */
  seals: [string, string][]
  open: { id: string; kind: OpenKind; state: State; target: string }[]
}

export function journalName(j: number): string {
  return `agent-${String(j).padStart(6, '0')}`
}

/** The records of journal `j` of the plan; `start` is the epoch ms of its first record (one ms per record after). */
export function generateJournal(plan: Plan, j: number, key: KeyPair, start: number): JournalRows {
  const journal = journalName(j)
  const budget = Math.floor(plan.records / plan.journals) + (j < plan.records % plan.journals ? 1 : 0)
  const openHere = Math.floor(plan.inFlight / plan.journals) + (j < plan.inFlight % plan.journals ? 1 : 0)
  let clock = start
  const signer = relaySigner(RELAY, key, () => new Date(clock))
  const sealing = plan.form !== 'records' ? sealer({ key, id: RELAY, role: 'relay' }) : undefined
  /** The relay's records since its last commit, sealed together at the commit (form 'seals'). */
  let unsealed: { hash: string; at: string }[] = []
  const commit = () => {
    if (!sealing || unsealed.length === 0) return
    const seal = sealing.seal(unsealed)
    out.seals.push([seal.statement.at, JSON.stringify(seal)])
    unsealed = []
  }
  const out: JournalRows = { journal, records: [], effects: [], head: { seq: 0, hash: GENESIS_HASH }, seals: [], open: [] }
  const last = new Map<string, { data: JsonObject; text: string; state: State; seq: number; at: string }>()
  const created = new Map<string, string>()
  const effectTexts = new Map<string, string>()
  let n = 0

  const append = (e: Effect, state: State, data: JsonObject, text?: string, sealed = false) => {
    // A commit's records share its time (the store's `at`), so a seal is found by it.
    const at = new Date(sealed && unsealed.length > 0 ? clock - 1 : clock++).toISOString()
    const seq = ++out.head.seq
    const dataText = text ?? canonicalJson(data)
    const hash = recordHash({ journal, seq, effectId: e.id, state, at, data: dataText, prevHash: out.head.hash })
    out.records.push([journal, seq, e.id, state, at, dataText, out.head.hash, hash])
    out.head.hash = hash
    if (sealed) unsealed.push({ hash, at })
    if (state === 'PROPOSED') created.set(e.id, at)
    last.set(e.id, { data, text: dataText, state, seq, at })
  }
  // The agent's proposal: unsigned, its data the effect and its tier, as the store writes it.
  const propose = (e: Effect) => {
    const t = requestTexts({ effectId: e.id, from: null, to: 'PROPOSED', data: {}, effect: e, tier: TIERS[e.target]! })
    effectTexts.set(e.id, t.effectText!)
    append(e, 'PROPOSED', t.data, t.dataText)
  }
  // The relay's record: in its commit's seal, or (before seals) signed as following the effect's record before it.
  const step = (e: Effect, to: State, data: JsonObject) => {
    const before = last.get(e.id)!
    if (sealing) append(e, to, data, undefined, true)
    else append(e, to, signer.sign(e.id, before.state, to, followsOf(before.data), data))
  }
  const row = (e: Effect) => {
    const l = last.get(e.id)!
    const settled = l.state === 'COMMITTED' || l.state === 'REJECTED' || l.state === 'FAILED'
    out.effects.push([e.id, journal, e.target, e.action, TIERS[e.target]!, effectTexts.get(e.id)!, l.state, l.seq, l.text, created.get(e.id)!, l.at, settled ? l.at : null])
  }

  const settledGroup = (size: number) => {
    const es = Array.from({ length: size }, () => effect(journal, j, n++, 'settled'))
    for (const e of es) propose(e)
    for (const e of es) {
      step(e, 'AUTHORIZED', {})
      step(e, 'DISPATCHED', {})
    }
    commit()
    for (const e of es) step(e, 'COMMITTED', { receipt: receiptOf(e), via: 'apply' })
    commit()
    for (const e of es) row(e)
  }
  const openEffect = (index: number) => {
    const kind = KINDS[index % KINDS.length]!
    const e = effect(journal, j, n++, kind, index)
    propose(e)
    if (kind === 'held') step(e, 'HELD', { rule: RULE.name })
    if (kind === 'dispatched' || kind === 'returned' || kind === 'ambiguous') {
      step(e, 'AUTHORIZED', {})
      step(e, 'DISPATCHED', {})
    }
    // Returned by its target with a wait that is long over (returned.ts): recovery sends it again.
    if (kind === 'returned') step(e, 'AUTHORIZED', { returned: 'rate limited', notBefore: new Date(clock - DAY).toISOString() })
    if (kind === 'ambiguous') step(e, 'AMBIGUOUS', { reason: 'outcome unknown: the connection was reset' })
    commit()
    row(e)
    out.open.push({ id: e.id, kind, state: last.get(e.id)!.state, target: e.target })
  }

  const openRecords = (kind: OpenKind) => ({ dispatched: 3, proposed: 1, returned: 4, held: 2, ambiguous: 4 })[kind]
  const indexes = Array.from({ length: openHere }, (_, k) => j + k * plan.journals)
  const old = indexes.filter((i) => i % 10 === 9)
  const recent = indexes.filter((i) => i % 10 !== 9)
  const settledBudget = budget - indexes.reduce((s, i) => s + openRecords(KINDS[i % KINDS.length]!), 0)
  const settledEffects = Math.max(0, Math.floor(settledBudget / 4))
  const oldAt = Math.floor(settledEffects / 10)
  for (let made = 0; made < settledEffects; ) {
    if (made >= oldAt) while (old.length) openEffect(old.shift()!)
    const size = Math.min(GROUP, settledEffects - made, made < oldAt ? oldAt - made : GROUP)
    settledGroup(size)
    made += size
  }
  while (old.length) openEffect(old.shift()!)
  for (const i of recent) openEffect(i)
  return out
}

function effect(journal: string, j: number, n: number, kind: OpenKind | 'settled', index = 0): Effect {
  const target = kind === 'held' ? 'payments' : kind === 'ambiguous' ? 'mail' : kind === 'dispatched' ? ['payments', 'orders', 'mail'][index % 3]! : ['payments', 'orders', 'mail'][n % 3]!
  const amount = kind === 'held' ? `${900 + (n % 90)}.00` : `${(n % 400) + 10}.${String(n % 100).padStart(2, '0')}`
  const args: JsonObject =
    target === 'payments'
      ? { charge: `ch_${j.toString(36)}_${n.toString(36)}`, amount, currency: 'USD', reason: 'requested_by_customer' }
      : target === 'orders'
        ? { order: `ord_${j}_${n}`, status: 'shipped', carrier: 'ups' }
        : { to: `customer-${j}-${n}@example.com`, template: 'refund-issued', locale: 'en' }
  return toEffect({ thread: journal, target, action: target === 'payments' ? 'refund' : target === 'orders' ? 'update' : 'send', args, premises: { seen: { version: n, etag: `"${n.toString(16)}"` } } })
}

function receiptOf(e: Effect): JsonObject {
  return { id: `re_${e.id.slice(0, 24)}`, status: 'succeeded', amount: (e.args as JsonObject).amount ?? null }
}
