/**
 * The body of one SQLite append transaction. SqliteStore runs it inside
 * BEGIN IMMEDIATE, so the rows read here are the committed truth and stay
 * so until COMMIT: read the effects and journal heads the batch touches, plan
 * in memory (append-plan.ts: compare-and-set, fencing, lifecycle, chain), write.
 *
 * It runs once per durable step of every effect, four times per effect, so
 * it is shaped for the usual batch (one step of one existing effect): one
 * primary-key probe returns the effect's row with its journal's head, and the
 * head is then written with a plain UPDATE. Proposals read their journal's
 * head separately (their effect has no row yet).
 */
import { canonicalJson } from '../../canonical-json.js'
import type { EffectSnapshot } from '../../effect.js'
import { StoreError } from '../../errors.js'
import { isTerminal } from '../../lifecycle.js'
import { sealsOf } from '../seals.js'
import { effectJson, planAppend, proposedJournal, type ChainHead } from '../append-plan.js'
import { GENESIS_HASH, type AppendRequest, type AppendResult, type Lease } from '../store.js'
import type { AppendRow, EffectRow, Statements } from './statements.js'

export function appendInTransaction(
  q: Statements,
  toSnapshot: (row: EffectRow) => EffectSnapshot,
  requests: readonly AppendRequest[],
  at: string,
): AppendResult[] {
  const current = new Map<string, EffectSnapshot>()
  const leases = new Map<string, Lease>()
  const heads = new Map<string, ChainHead>()
  // Journals whose head row exists: the head is then updated in place, never re-inserted.
  const stored = new Set<string>()
  const probed = new Set<string>()
  for (const { effectId } of requests) {
    if (probed.has(effectId)) continue
    probed.add(effectId)
    const row = q.effectForAppend.get(effectId) as AppendRow | undefined
    if (!row) continue
    current.set(row.id, toSnapshot(row))
    if (row.lease_relay && row.lease_token != null) leases.set(row.id, { relay: row.lease_relay, token: row.lease_token })
    if (!heads.has(row.journal)) {
      if (row.head_seq !== null && row.head_hash !== null) {
        heads.set(row.journal, { seq: row.head_seq, hash: row.head_hash })
        stored.add(row.journal)
      } else {
        heads.set(row.journal, { seq: 0, hash: GENESIS_HASH })
      }
    }
  }
  for (const r of requests) {
    // A proposal of an effect that already exists goes to that effect's journal (read above).
    const journal = current.has(r.effectId) ? undefined : proposedJournal(r)
    if (journal === undefined || heads.has(journal)) continue
    const h = q.head.get(journal) as { head_seq: number; head_hash: string } | undefined
    heads.set(journal, h ? { seq: h.head_seq, hash: h.head_hash } : { seq: 0, hash: GENESIS_HASH })
    if (h) stored.add(journal)
  }

  const plan = planAppend(requests, current, heads, at, leases)
  for (const { record: r, dataText } of plan.records) {
    q.insertRecord.run(r.journal, r.seq, r.effectId, r.state, r.at, dataText, r.prevHash, r.hash)
  }
  for (const { snapshot: s, previousSeq, detailText, effectText } of plan.effects) {
    const settledAt = isTerminal(s.state) ? s.updatedAt : null
    if (previousSeq === null) {
      const e = s.effect
      q.insertEffect.run(e.id, e.thread, e.thread, e.target, e.action, s.tier, effectText ?? canonicalJson(effectJson(e)), s.state, s.seq, detailText, s.createdAt, s.updatedAt, settledAt)
      continue
    }
    // Only the step that settles an effect writes settled_at (schemas/sqlite/0001_baseline.sql): the others touch no index.
    const changed = settledAt
      ? q.settleEffect.run(s.state, s.seq, detailText, s.updatedAt, settledAt, s.effect.id, previousSeq).changes
      : q.updateEffect.run(s.state, s.seq, detailText, s.updatedAt, s.effect.id, previousSeq).changes
    if (changed !== 1) {
      throw new StoreError(`effect ${s.effect.id} changed under an append that held the write lock; the journal is being written without it`)
    }
  }
  for (const [journal, h] of plan.heads) {
    if (stored.has(journal)) q.updateHead.run(h.seq, h.hash, journal)
    else q.insertHead.run(journal, h.seq, h.hash)
  }
  for (const seal of sealsOf(requests, plan.results)) q.insertSeal.run(seal.statement.at, JSON.stringify(seal))
  return plan.results
}
