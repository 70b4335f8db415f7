/**
 * What anyone with write access to the store can do, for the tests that
 * prove `outbox verify` sees it: rewrite journal records directly in the
 * tables, recompute the hash chain over them (the formula is public:
 * src/core/stores/record-hash.ts), and bring every journal's head and every
 * effects row into line with the result, so nothing inside the store
 * disagrees with anything else.
 */
import { canonicalJson } from '../../src/core/canonical-json.js'
import { recordHash } from '../../src/core/stores/record-hash.js'
import { GENESIS_HASH } from '../../src/core/stores/store.js'
import type { State } from '../../src/core/lifecycle.js'
import type { OutboxHarness, RawRecord } from './outbox-stores.js'

/** The records in (journal, seq) order, each journal's chain recomputed from its first record. */
export function rechain(rows: RawRecord[]): RawRecord[] {
  const sorted = [...rows].sort((a, b) => (a.journal < b.journal ? -1 : a.journal > b.journal ? 1 : a.seq - b.seq))
  const heads = new Map<string, string>()
  return sorted.map((r) => {
    const prev = heads.get(r.journal) ?? GENESIS_HASH
    const hash = recordHash({ journal: r.journal, seq: r.seq, effectId: r.effect_id, state: r.state as State, at: r.at, data: r.data, prevHash: prev })
    heads.set(r.journal, hash)
    return { ...r, prev_hash: prev, hash }
  })
}

/**
 * Rewrites the journal as `edit` says, recomputes the chain, and rewrites
 * the journals' heads and (unless `effects` is false, for data that no
 * longer parses) the effects rows to match.
 */
export async function forge(h: OutboxHarness, edit: (rows: RawRecord[]) => RawRecord[], options: { effects?: boolean } = {}): Promise<RawRecord[]> {
  const rows = rechain(edit(await h.rows()))
  await h.rewrite(rows)
  await align(h, rows, options.effects ?? true)
  return rows
}

/** A record's data, changed. */
export function withData(r: RawRecord, change: (data: Record<string, any>) => Record<string, any>): RawRecord {
  return { ...r, data: canonicalJson(change(JSON.parse(r.data))) }
}

/** One byte of a record's stored data text replaced, so it no longer parses. */
export function flipByte(r: RawRecord): RawRecord {
  // The first '{' becomes '[': the text is no longer a JSON object, nor any JSON at all.
  return { ...r, data: `[${r.data.slice(1)}` }
}

async function align(h: OutboxHarness, rows: RawRecord[], effects: boolean): Promise<void> {
  const postgres = h.config.kind === 'postgres'
  const heads = new Map<string, RawRecord>()
  const last = new Map<string, RawRecord>()
  const proposed = new Map<string, RawRecord>()
  for (const r of rows) {
    heads.set(r.journal, r)
    last.set(r.effect_id, r)
    if (r.state === 'PROPOSED') proposed.set(r.effect_id, r)
  }
  await h.exec('DELETE FROM journals')
  for (const r of heads.values()) await h.exec('INSERT INTO journals (journal, head_seq, head_hash) VALUES (?, ?, ?)', [r.journal, r.seq, r.hash])
  if (!effects) return
  for (const [id, r] of last) {
    const effect = canonicalJson(JSON.parse(proposed.get(id)!.data).effect)
    const settled = ['COMMITTED', 'REJECTED', 'FAILED'].includes(r.state) ? r.at : null
    await (postgres
      ? h.exec('UPDATE effects SET state = ?, last_seq = ?, detail = ?::json, updated_at = ?::timestamptz, effect = ?::json WHERE id = ?', [r.state, r.seq, r.data, r.at, effect, id])
      : h.exec('UPDATE effects SET state = ?, last_seq = ?, detail = ?, updated_at = ?, effect = ?, settled_at = ? WHERE id = ?', [r.state, r.seq, r.data, r.at, effect, settled, id]))
  }
}
