/**
 * Torn and tampered journals. Damage the store can explain is repaired by
 * the engine itself (a commit torn in the SQLite WAL was never committed);
 * damage it cannot explain in what recovery reads (the records of the
 * effects in flight, their links to their neighbours, their journal's head)
 * stops recovery and reconcile with an IntegrityError that names the journal
 * and the record:
 * - the last record of a journal removed (its head still points at it);
 * - an in-flight record's content altered; its state altered;
 * - the SQLite file itself truncated.
 * Nothing is dispatched on records that do not verify. Settled history is
 * not recovery's to read: a settled record altered is found by `outbox
 * verify` (and, once pinned, by the checkpoint's hash: outbox/checkpoint.ts),
 * while recovery finishes what was in flight.
 */
import { copyFileSync, mkdtempSync, rmSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../src/core/config/types.js'
import { toEffect } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { reconcileEffects } from '../../src/core/reconcile/reconcile.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { CountingTarget } from '../helpers/counting-target.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { verifyJournal } from './invariants.js'

const THREAD = 'torn'

/** Two effects committed (records 1-4, 5-8), a third left DISPATCHED (9-11), for recovery to settle. */
async function fill(store: Store): Promise<{ inFlight: string; target: CountingTarget }> {
  const target = new CountingTarget('svc', 1)
  const gate = new Gate({ store, targets: [target], retry: { maxAttempts: 1, backoffMs: 1 } })
  for (const n of [1, 2]) await gate.submit({ thread: THREAD, target: 'svc', action: 'pay', args: { n } })
  // An unknown outcome (the request may have left): it stays DISPATCHED for recovery to settle.
  target.faults = [{ kind: 'unknown' }]
  const left = await gate.submit({ thread: THREAD, target: 'svc', action: 'pay', args: { n: 3 } })
  expect(left).toMatchObject({ status: 'in_flight', state: 'DISPATCHED' })
  return { inFlight: left.effectId, target: new CountingTarget('svc', 1) }
}

/** Recovery and reconcile both refuse, naming where; nothing is applied. */
async function expectRefused(store: Store, config: StoreConfig, where: RegExp): Promise<void> {
  const target = new CountingTarget('svc', 1)
  const recover = new Gate({ store, targets: [target] }).recover()
  await expect(recover).rejects.toMatchObject({ code: 'E_INTEGRITY', message: expect.stringMatching(where) })
  const reconcile = reconcileEffects({ store, storeConfig: config, targets: [target], olderThanMs: 0, concurrency: 1 })
  await expect(reconcile).rejects.toMatchObject({ code: 'E_INTEGRITY', exitCode: 5 })
  expect(target.calls.size).toBe(0)
  expect((await verifyJournal(store)).join('\n')).toMatch(where)
}

interface Tamper {
  exec(sql: string, params?: unknown[]): Promise<void>
  table: string
}

const cases: [string, (t: Tamper) => Promise<void>, RegExp][] = [
  [
    'the last record removed',
    (t) => t.exec(`DELETE FROM ${t.table} WHERE journal = '${THREAD}' AND seq = (SELECT max(seq) FROM ${t.table} WHERE journal = '${THREAD}')`),
    /journal "torn" record 11 .*removed from the end/,
  ],
  [
    'an in-flight record altered',
    (t) => t.exec(`UPDATE ${t.table} SET data = '{"attempt":1,"via":"forged"}' WHERE journal = '${THREAD}' AND seq = 10`),
    /journal "torn" record 10 .*altered/,
  ],
  [
    'a state altered',
    (t) => t.exec(`UPDATE ${t.table} SET state = 'COMMITTED' WHERE journal = '${THREAD}' AND seq = 11`),
    /journal "torn" record 11/,
  ],
]

describe('torn or tampered journal on SQLite', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-torn-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it.each(cases)('%s: refused, naming the record', async (name, damage, where) => {
    const config: StoreConfig = { kind: 'sqlite', path: join(dir, `${name.replace(/\W+/g, '-')}.db`) }
    const store = await openStore(config)
    try {
      await fill(store)
      const db = new Database(config.path)
      await damage({ table: 'journal_records', exec: async (sql) => void db.exec(sql) })
      db.close()
      await expectRefused(store, config, where)
    } finally {
      await store.close()
    }
  })

  it('a settled record altered: recovery, reading only what is in flight, settles the in-flight effect; verify names the record', async () => {
    const config: StoreConfig = { kind: 'sqlite', path: join(dir, 'settled.db') }
    const store = await openStore(config)
    try {
      const { inFlight } = await fill(store)
      const db = new Database(config.path)
      db.exec(`UPDATE journal_records SET data = '{"receipt":{"amount":"1000000.00"},"via":"apply"}' WHERE journal = '${THREAD}' AND seq = 4`)
      db.close()
      const target = new CountingTarget('svc', 1)
      const report = await new Gate({ store, targets: [target] }).recover()
      expect(report).toMatchObject({ recordsRead: 3, effects: [{ effectId: inFlight, action: 're-applied', outcome: { status: 'committed' } }] })
      expect((await verifyJournal(store)).join('\n')).toMatch(/journal "torn" record 4 .*altered/)
    } finally {
      await store.close()
    }
  })

  it('a commit torn in the WAL was never committed: the journal verifies without it and recovery goes on', async () => {
    const config: StoreConfig = { kind: 'sqlite', path: join(dir, 'wal.db') }
    const store = await openStore(config)
    const { inFlight } = await fill(store)
    // A crash image: the files as they are on disk while the store is open (the WAL not yet checkpointed).
    const image = join(dir, 'wal-image.db')
    copyFileSync(config.path, image)
    copyFileSync(`${config.path}-wal`, `${image}-wal`)
    await store.close()
    // The last commit (the third effect's first: PROPOSED, AUTHORIZED, DISPATCHED) torn: its last frame cut short.
    truncateSync(`${image}-wal`, statSync(`${image}-wal`).size - 100)
    const torn = await openStore({ kind: 'sqlite', path: image })
    try {
      expect(await verifyJournal(torn)).toEqual([])
      // None of its three records survives: the commit was never made.
      expect(await torn.get(inFlight)).toBeUndefined()
      const target = new CountingTarget('svc', 1)
      const gate = new Gate({ store: torn, targets: [target] })
      expect((await gate.recover()).inFlight).toBe(0)
      // The agent submits it again: the same effect, applied once.
      expect(await gate.submit({ thread: THREAD, target: 'svc', action: 'pay', args: { n: 3 } })).toMatchObject({ status: 'committed', effectId: inFlight })
      expect((await torn.get(inFlight))?.state).toBe('COMMITTED')
      expect(target.count(inFlight)).toBe(1)
    } finally {
      await torn.close()
    }
  })

  it('the database file truncated: refused as damaged, naming the file', async () => {
    const config: StoreConfig = { kind: 'sqlite', path: join(dir, 'cut.db') }
    const store = await openStore(config)
    await fill(store)
    await store.close()
    truncateSync(config.path, Math.floor(statSync(config.path).size / 2))
    const opened = openStore(config).then(async (s) => {
      try {
        await new Gate({ store: s, targets: [new CountingTarget('svc', 1)] }).recover()
      } finally {
        await s.close()
      }
    })
    await expect(opened).rejects.toMatchObject({ code: 'E_INTEGRITY', message: expect.stringContaining(config.path) })
  })
})

describe('torn or tampered journal on PostgreSQL', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(() => db?.drop())

  it.each(cases)('%s: refused, naming the record', async (name, damage, where) => {
    const schema = `torn_${cases.findIndex((c) => c[0] === name)}`
    const config: StoreConfig = { kind: 'postgres', url: db.url, schema }
    await install(config)
    const store = await openStore(config)
    const client = new pg.Client({ connectionString: db.url })
    await client.connect()
    try {
      await fill(store)
      await damage({ table: `${schema}.journal_records`, exec: async (sql) => void (await client.query(sql)) })
      await expectRefused(store, config, where)
    } finally {
      await client.end()
      await store.close()
    }
  })
})
