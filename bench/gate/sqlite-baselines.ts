/**
 * bench/gate, SQLite: (a), (a') and (b) measured in alternating slices, so
 * that load from other work on the machine (it shares two cores and one
 * disk) falls on all three alike and their ratios hold:
 *
 *   (a)  write+fdatasync of a 201-byte line to a growing file;
 *   (a') the rows an append must write, alone: one record, the effect's row
 *        and the journal's head as one transaction on a journal with the
 *        installed schema (all its indexes), WAL and synchronous=FULL, with
 *        nothing else (no reads, no plan, no hash, no driver above it). Four
 *        of those per effect are the least an effect can cost with this
 *        schema, so a' ÷ a is the most b ÷ (a/4) can reach here;
 *   (b)  sequential gate.submit to a no-op tier-1 target.
 */
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { openStore } from '../../src/core/stores/open.js'
import { GENESIS_HASH } from '../../src/core/stores/store.js'
import type { EffectTarget } from '../../src/core/targets/target.js'

const SLICES = 10

export function p50(ms: number[]): number {
  const sorted = [...ms].sort((x, y) => x - y)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

export interface SqliteBaselines {
  commit: number
  floor: number
  sequential: number
  /** Median time of one (a) commit and of one (b) effect, ms. */
  commitP50Ms: number
  sequentialP50Ms: number
}

/** One write+fdatasync of a 201-byte line appended to `file`; call close() when done. */
export function rawAppender(file: string): { step(): void; close(): void } {
  const fd = openSync(file, 'a')
  const line = Buffer.from(`${'x'.repeat(200)}\n`)
  return {
    step: () => {
      writeSync(fd, line)
      fdatasyncSync(fd)
    },
    close: () => closeSync(fd),
  }
}

/**
 * The rows of one gate step on a fresh journal at `path` (installed schema;
 * `bare` drops its secondary indexes), cycling PROPOSED → COMMITTED as the
 * gate does: each call is one durable transaction.
 */
export async function appendRows(path: string, bare = false): Promise<{ step(): void; close(): void }> {
  await (await openStore({ kind: 'sqlite', path })).close()
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  db.pragma('wal_autocheckpoint = 4000')
  if (bare) {
    const indexes = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`).pluck().all() as string[]
    for (const name of indexes) db.exec(`DROP INDEX "${name}"`)
  }
  const record = db.prepare(`INSERT INTO journal_records (journal, seq, effect_id, state, at, data, prev_hash, hash) VALUES ('floor', ?, ?, ?, ?, ?, ?, ?)`)
  const effect = db.prepare(
    `INSERT INTO effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at) VALUES (?, 'floor', 'floor', 'noop', 'noop', 1, ?, 'PROPOSED', ?, '{}', ?, ?)`,
  )
  const move = db.prepare(`UPDATE effects SET state = ?, last_seq = ?, detail = '{}', updated_at = ? WHERE id = ?`)
  const settle = db.prepare(`UPDATE effects SET state = ?, last_seq = ?, detail = '{}', updated_at = ?, settled_at = ? WHERE id = ?`)
  const insertHead = db.prepare(`INSERT INTO journals (journal, head_seq, head_hash) VALUES ('floor', ?, ?)`)
  const updateHead = db.prepare(`UPDATE journals SET head_seq = ?, head_hash = ? WHERE journal = 'floor'`)
  const STEPS = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'] as const
  let seq = 0
  let id = ''
  const step = db.transaction(() => {
    const state = STEPS[seq % 4]!
    const at = new Date().toISOString()
    if (state === 'PROPOSED') id = toEffect({ thread: 'floor', target: 'noop', action: 'noop', args: { seq } }).id
    seq++
    record.run(seq, id, state, at, state === 'PROPOSED' ? `{"effect":{"id":"${id}"},"tier":1}` : '{}', GENESIS_HASH, GENESIS_HASH)
    if (state === 'PROPOSED') effect.run(id, `{"id":"${id}"}`, seq, at, at)
    else if (state === 'COMMITTED') settle.run(state, seq, at, at, id)
    else move.run(state, seq, at, id)
    if (seq === 1) insertHead.run(seq, GENESIS_HASH)
    else updateHead.run(seq, GENESIS_HASH)
  })
  return { step: () => step.immediate(), close: () => db.close() }
}

/** Each of the three gets `seconds` in all, in SLICES turns. */
export async function sqliteBaselines(dir: string, target: EffectTarget, seconds: number): Promise<SqliteBaselines> {
  const raw = rawAppender(join(dir, 'raw.log'))
  const rows = await appendRows(join(dir, 'floor.db'))
  const store = await openStore({ kind: 'sqlite', path: join(dir, 'journal.db') })
  const gate = new Gate({ store, targets: [target] })
  try {
    const n = { commit: 0, floor: 0, sequential: 0 }
    const times: Record<keyof typeof n, number[]> = { commit: [], floor: [], sequential: [] }
    const slice = (seconds * 1000) / SLICES
    const during = async (key: keyof typeof n, step: () => unknown) => {
      const end = performance.now() + slice
      while (performance.now() < end) {
        n[key]++
        const t0 = performance.now()
        // Only the gate's step is awaited: the baselines run as tight loops, as they always did.
        const pending = step()
        if (pending instanceof Promise) await pending
        times[key].push(performance.now() - t0)
      }
    }
    for (let i = 0; i < SLICES; i++) {
      await during('commit', raw.step)
      await during('floor', rows.step)
      await during('sequential', async () => {
        const out = await gate.submit({ thread: 'bench-seq', target: target.name, action: 'noop', args: { i: n.sequential } })
        if (out.status !== 'committed') throw new Error(`unexpected outcome ${out.status}`)
      })
    }
    return { commit: n.commit / seconds, floor: n.floor / seconds, sequential: n.sequential / seconds, commitP50Ms: p50(times.commit), sequentialP50Ms: p50(times.sequential) }
  } finally {
    await gate.close()
    await store.close()
    rows.close()
    raw.close()
  }
}
