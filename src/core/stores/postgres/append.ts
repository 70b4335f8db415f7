/**
 * One batch of appends inside an open transaction (the caller owns BEGIN and
 * COMMIT). Journals are serialised by their head row: locked FOR UPDATE (in a
 * fixed order) before any effect state is read, so the compare-and-set and
 * the chain are decided on the latest committed data, on any number of hosts.
 */
import type pg from 'pg'
import type { EffectSnapshot } from '../../effect.js'
import { StoreError } from '../../errors.js'
import { planAppend, proposedJournal, type ChainHead } from '../append-plan.js'
import { GENESIS_HASH, type AppendRequest, type AppendResult, type Lease } from '../store.js'
import { notifyChannels } from './notify.js'
import { canonicalJson } from '../../canonical-json.js'
import { effectJson } from '../append-plan.js'
import { toSnapshot, type EffectRow } from './rows.js'
import type { PgStatements } from './statements.js'

export async function appendBatch(
  client: pg.ClientBase,
  sql: PgStatements,
  requests: AppendRequest[],
  at: string,
  schema: string,
): Promise<AppendResult[]> {
  const ids = [...new Set(requests.map((r) => r.effectId))]

  // Which journals to lock: a proposal names its own; the rest are looked up
  // (an effect never changes journal, so this read needs no lock).
  const journals = new Set<string>()
  for (const r of requests) {
    const j = proposedJournal(r)
    if (j !== undefined) journals.add(j)
  }
  const known = await client.query<{ id: string; journal: string }>(sql.journalsOf, [ids])
  for (const row of known.rows) journals.add(row.journal)
  const names = [...journals]

  const locked = await client.query<{ journal: string; head_seq: string; head_hash: string }>(sql.ensureAndLockHeads, [names, GENESIS_HASH])
  const heads = new Map<string, ChainHead>(locked.rows.map((h) => [h.journal, { seq: Number(h.head_seq), hash: h.head_hash }]))

  // Read after the locks: READ COMMITTED gives each statement a fresh snapshot.
  const current = new Map<string, EffectSnapshot>()
  const leases = new Map<string, Lease>()
  for (const row of (await client.query<EffectRow>(sql.effectsByIds, [ids])).rows) {
    current.set(row.id, toSnapshot(row))
    if (row.lease_relay && row.lease_token != null) leases.set(row.id, { relay: row.lease_relay, token: Number(row.lease_token) })
  }

  const plan = planAppend(requests, current, heads, at, leases)
  if (plan.records.length === 0) return plan.results

  const recs = plan.records
  const created = plan.effects.filter((e) => e.previousSeq === null)
  const moved = plan.effects.filter((e) => e.previousSeq !== null)
  const written = [...plan.heads]
  const res = await client.query<{ moved: number }>(sql.writeBatch, [
    recs.map((p) => p.record.journal),
    recs.map((p) => p.record.seq),
    recs.map((p) => p.record.effectId),
    recs.map((p) => p.record.state),
    recs.map((p) => p.record.at),
    recs.map((p) => p.dataText),
    recs.map((p) => p.record.prevHash),
    recs.map((p) => p.record.hash),
    created.map((e) => e.snapshot.effect.id),
    created.map((e) => e.snapshot.effect.thread),
    created.map((e) => e.snapshot.effect.target),
    created.map((e) => e.snapshot.effect.action),
    created.map((e) => e.snapshot.tier),
    created.map((e) => canonicalJson(effectJson(e.snapshot.effect))),
    created.map((e) => e.snapshot.state),
    created.map((e) => e.snapshot.seq),
    created.map((e) => e.detailText),
    created.map((e) => e.snapshot.createdAt),
    created.map((e) => e.snapshot.updatedAt),
    moved.map((e) => e.snapshot.effect.id),
    moved.map((e) => e.snapshot.state),
    moved.map((e) => e.snapshot.seq),
    moved.map((e) => e.detailText),
    moved.map((e) => e.snapshot.updatedAt),
    moved.map((e) => e.previousSeq),
    written.map(([j]) => j),
    written.map(([, h]) => h.seq),
    written.map(([, h]) => h.hash),
    schema,
    // Delivered at COMMIT, and only then: a listener never hears of a write that did not happen.
    notifyChannels(recs.map((p) => p.record.state)),
  ])
  if (res.rows[0]!.moved !== moved.length) {
    throw new StoreError(`${moved.length - res.rows[0]!.moved} effect(s) changed under an append that held their journal's lock; something writes the journal without it`)
  }
  return plan.results
}
