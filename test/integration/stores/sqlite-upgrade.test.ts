/**
 * A SQLite journal written at the baseline (schema version 1, the first
 * release's schema) is upgraded in place to the latest version when a store
 * opens it: every record keeps its bytes and its chain, the later migrations'
 * tables and indexes appear, and the store reads, verifies and extends the
 * journal as if it had been written at the latest version. (Journals from the
 * development builds before the baseline are refused by name: migrations.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../src/core/canonical-json.js'
import type { EffectSnapshot } from '../../../src/core/effect.js'
import { isTerminal, type State } from '../../../src/core/lifecycle.js'
import { effectJson, planAppend, type ChainHead } from '../../../src/core/stores/append-plan.js'
import { loadMigrations } from '../../../src/core/stores/migrations.js'
import { ChainVerifier } from '../../../src/core/stores/record-hash.js'
import { openSqliteStore } from '../../../src/core/stores/sqlite/open.js'
import { allRecords, effect, move, propose, PATH } from '../../contract/fixtures.js'

const dir = mkdtempSync(join(tmpdir(), 'interlock-sqlite-upgrade-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A journal at the baseline, written the way the baseline's store writes it (one transaction per step). */
function journalAtBaseline(file: string, walks: [ReturnType<typeof effect>, State][]): void {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)`)
  for (const m of loadMigrations('sqlite').filter((m) => m.version <= 1)) {
    db.exec(m.sql)
    db.prepare(`INSERT INTO schema_migrations VALUES (?, ?, ?, ?)`).run(m.version, m.name, m.checksum, '2030-01-01T00:00:00.000Z')
  }
  const current = new Map<string, EffectSnapshot>()
  const heads = new Map<string, ChainHead>()
  let t = Date.UTC(2030, 0, 1)
  const step = (request: Parameters<typeof planAppend>[0][number]) => {
    const journal = request.effect?.thread ?? current.get(request.effectId)!.effect.thread
    const plan = planAppend([request], current, new Map([[journal, heads.get(journal) ?? { seq: 0, hash: '0'.repeat(64) }]]), new Date(t++).toISOString())
    for (const { record: r, dataText } of plan.records) {
      db.prepare(`INSERT INTO journal_records VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(r.journal, r.seq, r.effectId, r.state, r.at, dataText, r.prevHash, r.hash)
    }
    for (const { snapshot: s, previousSeq, detailText } of plan.effects) {
      const e = s.effect
      if (previousSeq === null) {
        db.prepare(
          `INSERT INTO effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(e.id, e.thread, e.thread, e.target, e.action, s.tier, canonicalJson(effectJson(e)), s.state, s.seq, detailText, s.createdAt, s.updatedAt, isTerminal(s.state) ? s.updatedAt : null)
      } else {
        db.prepare(`UPDATE effects SET state = ?, last_seq = ?, detail = ?, updated_at = ?, settled_at = ? WHERE id = ?`).run(s.state, s.seq, detailText, s.updatedAt, isTerminal(s.state) ? s.updatedAt : null, e.id)
      }
      current.set(e.id, s)
    }
    for (const [j, h] of plan.heads) {
      db.prepare(`INSERT INTO journals VALUES (?, ?, ?) ON CONFLICT (journal) DO UPDATE SET head_seq = excluded.head_seq, head_hash = excluded.head_hash`).run(j, h.seq, h.hash)
      heads.set(j, h)
    }
  }
  for (const [e, state] of walks) {
    step(propose(e))
    let from: State = 'PROPOSED'
    for (const to of PATH[state]) {
      step(move(e, from, to, { step: to }))
      from = to
    }
  }
  db.close()
}

describe('SQLite journal upgraded from the baseline to the latest version', () => {
  it('keeps every record and its chain, gains the later tables and indexes, and goes on appending', async () => {
    const file = join(dir, 'v1.db')
    const [done, rejected, inFlight, held] = [effect('t1', 1), effect('t1', 2), effect('t2', 3), effect('t1', 4)]
    journalAtBaseline(file, [
      [done, 'COMMITTED'],
      [rejected, 'REJECTED'],
      [inFlight, 'DISPATCHED'],
      [held, 'HELD'],
    ])
    const before = new Database(file, { readonly: true })
    const recordsBefore = before.prepare(`SELECT * FROM journal_records ORDER BY journal, seq`).all()
    before.close()

    const store = openSqliteStore(file, { autoInstall: true })
    try {
      const raw = new Database(file, { readonly: true })
      expect(raw.prepare(`SELECT max(version) FROM schema_migrations`).pluck().get()).toBe(loadMigrations('sqlite').at(-1)!.version)
      expect(raw.prepare(`SELECT * FROM journal_records ORDER BY journal, seq`).all()).toEqual(recordsBefore)
      expect(raw.prepare(`SELECT sql FROM sqlite_master WHERE name = 'journal_records'`).pluck().get()).toMatch(/WITHOUT ROWID/)
      const objects = raw.prepare(`SELECT name FROM sqlite_master WHERE type IN ('table', 'index')`).pluck().all()
      expect(objects).toEqual(expect.arrayContaining(['checkpoints', 'journal_bases', 'effects_created', 'effects_target_created']))
      const settled = raw.prepare(`SELECT id FROM effects WHERE settled_at IS NOT NULL ORDER BY id`).pluck().all()
      expect(settled).toEqual([done.id, rejected.id].sort())
      raw.close()

      // Read through the new indexes: the in-flight scan, history, counts and lists by state.
      const scan = await store.scanInFlight()
      expect(scan.effects.map((s) => [s.effect.id, s.state]).sort()).toEqual([[inFlight.id, 'DISPATCHED'], [held.id, 'HELD']].sort())
      expect((await store.history(done.id)).map((r) => r.state)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'])
      expect(await store.countByState()).toMatchObject({ COMMITTED: 1, REJECTED: 1, DISPATCHED: 1, HELD: 1, PROPOSED: 0 })
      expect((await store.list({ states: ['COMMITTED', 'REJECTED'] })).map((s) => s.effect.id).sort()).toEqual([done.id, rejected.id].sort())
      expect((await store.list({ states: ['HELD'] })).map((s) => s.effect.id)).toEqual([held.id])

      // The chain goes on where the baseline's store left it, and the effect leaves the open set when it settles.
      const [r] = await store.append([move(inFlight, 'DISPATCHED', 'COMMITTED', { receipt: 'r' })])
      expect(r).toMatchObject({ ok: true, record: { journal: 't2', seq: 4 } })
      expect((await store.scanInFlight()).effects.map((s) => s.effect.id)).toEqual([held.id])
      const verifier = new ChainVerifier()
      for (const record of await allRecords(store)) verifier.check(record)
    } finally {
      await store.close()
    }
  })
})
