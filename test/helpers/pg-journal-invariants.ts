/**
 * The journal's invariants, read straight from a PostgreSQL schema's tables
 * (not through the store, whose reads verify what they return and would
 * throw before naming everything wrong): every journal numbered 1..n with no
 * gap or duplicate, each record hash-chained to the one before it and
 * matching its content; each head equal to its journal's last record; each
 * effect's records following the lifecycle, all in the effect's journal; and
 * the effect's row equal to the fold of its records (state, seq and detail
 * of its last one). Used by the adversarial tests of the batch appends.
 */
import type pg from 'pg'
import { canTransition, type State } from '../../src/core/lifecycle.js'
import { quoteSchema } from '../../src/core/stores/postgres/identifier.js'
import { recordHash } from '../../src/core/stores/record-hash.js'
import { GENESIS_HASH } from '../../src/core/stores/store.js'

export interface RecordRow {
  journal: string
  seq: number
  effect_id: string
  state: State
  at: string
  data: string
  prev_hash: string
  hash: string
}

/** Every broken invariant, named; an empty list when the schema holds them all. */
export async function journalViolations(client: pg.ClientBase, schema: string): Promise<string[]> {
  const s = quoteSchema(schema)
  const out: string[] = []
  const records = (
    await client.query<RecordRow & { seq: string }>(`SELECT journal, seq, effect_id, state, at, data, prev_hash, hash FROM ${s}.journal_records ORDER BY journal, seq`)
  ).rows.map((r) => ({ ...r, seq: Number(r.seq) }))
  const heads = new Map(
    (await client.query<{ journal: string; head_seq: string; head_hash: string }>(`SELECT journal, head_seq, head_hash FROM ${s}.journals`)).rows.map((h) => [
      h.journal,
      { seq: Number(h.head_seq), hash: h.head_hash },
    ]),
  )
  const last = new Map<string, { seq: number; hash: string }>()
  const byEffect = new Map<string, RecordRow[]>()
  for (const r of records) {
    const before = last.get(r.journal) ?? { seq: 0, hash: GENESIS_HASH }
    if (r.seq !== before.seq + 1) out.push(`${r.journal} #${r.seq}: follows #${before.seq} (a gap or a duplicate)`)
    if (r.prev_hash !== before.hash) out.push(`${r.journal} #${r.seq}: previous-hash does not link to #${before.seq}`)
    const hash = recordHash({ journal: r.journal, seq: r.seq, effectId: r.effect_id, state: r.state, at: r.at, prevHash: r.prev_hash, data: r.data })
    if (hash !== r.hash) out.push(`${r.journal} #${r.seq}: hash does not match its content`)
    last.set(r.journal, { seq: r.seq, hash: r.hash })
    byEffect.set(r.effect_id, [...(byEffect.get(r.effect_id) ?? []), r])
  }
  for (const [journal, end] of last) {
    const head = heads.get(journal)
    if (!head) out.push(`${journal}: records but no head`)
    else if (head.seq !== end.seq || head.hash !== end.hash) out.push(`${journal}: head #${head.seq} is not the last record #${end.seq}`)
  }
  for (const [journal, head] of heads) {
    if (!last.has(journal) && (head.seq !== 0 || head.hash !== GENESIS_HASH)) out.push(`${journal}: head #${head.seq} over no record`)
  }
  const effects = (
    await client.query<{ id: string; journal: string; state: string; last_seq: string; detail: string }>(`SELECT id, journal, state, last_seq, detail::text AS detail FROM ${s}.effects`)
  ).rows
  const seen = new Set<string>()
  for (const e of effects) {
    seen.add(e.id)
    const own = byEffect.get(e.id) ?? []
    let from: State | null = null
    for (const r of own) {
      if (r.journal !== e.journal) out.push(`effect ${e.id}: record ${r.journal} #${r.seq} outside its journal ${e.journal}`)
      if (!canTransition(from, r.state)) out.push(`effect ${e.id}: ${from ?? '(none)'} -> ${r.state} at ${r.journal} #${r.seq} is not a transition`)
      from = r.state
    }
    const end = own.at(-1)
    if (!end) {
      out.push(`effect ${e.id}: a row with no record`)
      continue
    }
    if (e.state !== end.state || Number(e.last_seq) !== end.seq || JSON.stringify(JSON.parse(e.detail)) !== JSON.stringify(JSON.parse(end.data))) {
      out.push(`effect ${e.id}: row (${e.state} #${e.last_seq}) is not the fold of its records (${end.state} #${end.seq})`)
    }
  }
  for (const id of byEffect.keys()) if (!seen.has(id)) out.push(`effect ${id}: records but no row`)
  return out
}

/** The records of each effect, in order: what a test compares with what each writer was told. */
export async function recordsByEffect(client: pg.ClientBase, schema: string): Promise<Map<string, RecordRow[]>> {
  const { rows } = await client.query<RecordRow & { seq: string }>(
    `SELECT journal, seq, effect_id, state, at, data, prev_hash, hash FROM ${quoteSchema(schema)}.journal_records ORDER BY journal, seq`,
  )
  const out = new Map<string, RecordRow[]>()
  for (const r of rows) out.set(r.effect_id, [...(out.get(r.effect_id) ?? []), { ...r, seq: Number(r.seq) }])
  return out
}
