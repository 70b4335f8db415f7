/**
 * Upgrading a PostgreSQL schema while relays run, with what a DBA's night
 * holds: a long reader (pg_dump keeps ACCESS SHARE on every table it dumps,
 * and one snapshot, for its whole run).
 * - A migration that needs ACCESS EXCLUSIVE waits at most lock_timeout per
 *   attempt: relays' claims queued behind it wait no longer; it retries, and
 *   completes once the reader is done; when retries run out, the error names
 *   who held the table, and nothing of the migration was applied.
 * - An index is built concurrently: claims and appends go on while it waits
 *   for older snapshots; a build left invalid is built again.
 * - What each shipped migration declares it locks is what PostgreSQL takes.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoreConfig } from '../../src/core/config/types.js'
import { StoreError } from '../../src/core/errors.js'
import { install, type LockWait } from '../../src/core/stores/migrate.js'
import { loadMigrations, parseMigration, statementsOf, type Migration } from '../../src/core/stores/migrations.js'
import { withSchema } from '../../src/core/stores/postgres/identifier.js'
import { pgLockMode } from '../../src/core/stores/postgres/migrator.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

let db: TestDatabase
/** The backend's process id (pg sets it on the client, its types do not say so). */
const pid = (c: pg.Client): number => (c as pg.Client & { processID: number }).processID
const clients: pg.Client[] = []

beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  for (const c of clients) await c.end().catch(() => {})
  await db?.drop()
})

async function connect(application = 'interlock test'): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db.url, application_name: application })
  c.on('error', () => {})
  await c.connect()
  clients.push(c)
  return c
}

let s = 0
const config = (): StoreConfig & { kind: 'postgres' } => ({ kind: 'postgres', url: db.url, schema: `locks_${++s}` })
const baseline = () => loadMigrations('postgres').slice(0, 1)
/** A later migration of the kind that needs ACCESS EXCLUSIVE on effects. */
const alterEffects = (): Migration =>
  parseMigration(
    '0099_wide.sql',
    99,
    'wide',
    '-- lock: effects ACCESS EXCLUSIVE: claims and appends wait, at most lock_timeout\nALTER TABLE :"schema".effects ADD COLUMN wide_note text;\n',
  )

/** A pg_dump's hold on effects: a repeatable-read transaction that has read the table. */
async function longReader(schema: string): Promise<{ client: pg.Client; end: () => Promise<void> }> {
  const client = await connect('pg_dump')
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ')
  await client.query(`SELECT count(*) FROM "${schema}".effects`)
  return { client, end: () => client.query('COMMIT').then(() => undefined) }
}

/** A relay's claim, timed: a lease written on every ready effect (row-exclusive on effects, like claim()). */
async function timedClaims(schema: string, until: () => boolean): Promise<number[]> {
  const relay = await connect('interlock relay')
  const times: number[] = []
  while (!until()) {
    const t = performance.now()
    await relay.query(`UPDATE "${schema}".effects SET lease_expires = clock_timestamp() WHERE state = 'PROPOSED'`)
    times.push(performance.now() - t)
    await new Promise((r) => setTimeout(r, 50))
  }
  return times
}

async function seed(schema: string): Promise<void> {
  const c = await connect()
  await c.query(
    `INSERT INTO "${schema}".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
     VALUES ('e1', 'j', 'j', 't', 'a', 1, '{}', 'PROPOSED', 1, '{}', now(), now())`,
  )
}

async function hasColumn(schema: string, column: string): Promise<boolean> {
  const c = await connect()
  const { rows } = await c.query(`SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'effects' AND column_name = $2`, [schema, column])
  return rows.length === 1
}

describe('a migration that needs ACCESS EXCLUSIVE, behind a long reader', () => {
  it('holds claims up at most lock_timeout per attempt, retries, and completes once the reader is done', async () => {
    const cfg = config()
    await install(cfg, { migrations: baseline() })
    await seed(cfg.schema)
    const reader = await longReader(cfg.schema)
    const waits: LockWait[] = []
    let done = false
    const upgrade = install(cfg, {
      migrations: [...baseline(), alterEffects()],
      lockTimeoutMs: 300,
      lockRetries: 100,
      retryDelayMs: () => 200,
      onLockWait: (w) => waits.push(w),
    }).finally(() => {
      done = true
    })
    const claims = timedClaims(cfg.schema, () => done)
    // The reader runs for 3 s: longer than ten lock timeouts.
    await new Promise((r) => setTimeout(r, 3000))
    await reader.end()
    const report = await upgrade
    const times = await claims

    expect(report.applied.map((m) => m.name)).toEqual(['wide'])
    expect(await hasColumn(cfg.schema, 'wide_note')).toBe(true)
    expect(waits.length).toBeGreaterThanOrEqual(3)
    expect(waits[0]).toMatchObject({ migration: '0099_wide.sql', attempt: 1 })
    expect(waits[0]!.holders).toEqual([expect.objectContaining({ pid: pid(reader.client), application: 'pg_dump', relation: 'effects', mode: 'AccessShareLock' })])
    // Claims went on all along: none waited for the reader, only (at worst) for one lock_timeout.
    expect(times.length).toBeGreaterThan(10)
    expect(Math.max(...times)).toBeLessThan(1500)
  })

  it('when the retries run out: one error naming who holds the table, and nothing of the migration applied', async () => {
    const cfg = config()
    await install(cfg, { migrations: baseline() })
    const reader = await longReader(cfg.schema)
    try {
      const err = await install(cfg, { migrations: [...baseline(), alterEffects()], lockTimeoutMs: 200, lockRetries: 2, retryDelayMs: () => 50 }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(StoreError)
      expect((err as Error).message).toMatch(
        new RegExp(`^migration 0099_wide\\.sql did not get its locks within 200 ms in 3 attempts: pid ${pid(reader.client)} \\("pg_dump", user postgres\\) holds AccessShareLock on effects, its transaction open \\d+ s; nothing of it was applied$`),
      )
      expect((err as StoreError).hint).toMatch(/--lock-timeout/)
    } finally {
      await reader.end()
    }
    expect(await hasColumn(cfg.schema, 'wide_note')).toBe(false)
    const c = await connect()
    expect((await c.query(`SELECT max(version)::int AS v FROM "${cfg.schema}".schema_migrations`)).rows[0].v).toBe(1)
  })
})

describe('indexes built concurrently', () => {
  it('claims and appends go on while a build waits for an older snapshot; the install finishes when it ends', async () => {
    const cfg = config()
    await install(cfg, { migrations: loadMigrations('postgres').filter((m) => m.transaction) })
    await seed(cfg.schema)
    const reader = await longReader(cfg.schema)
    let done = false
    const installer = install(cfg).finally(() => {
      done = true
    })
    const watcher = await connect()
    // The build is under way: the installer holds SHARE UPDATE EXCLUSIVE on effects, and waits.
    let held: { mode: string; relname: string }[] = []
    for (let i = 0; i < 100 && held.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50))
      held = (
        await watcher.query(
          `SELECT l.mode, c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE a.application_name = 'interlock install' AND l.granted AND c.relname = 'effects' AND c.relnamespace = $1::regnamespace`,
          [cfg.schema],
        )
      ).rows
    }
    expect(held).toEqual([{ mode: 'ShareUpdateExclusiveLock', relname: 'effects' }])
    let n = 0
    const times = await timedClaims(cfg.schema, () => n++ >= 10 || done)
    expect(done).toBe(false)
    await reader.end()
    expect(Math.max(...times)).toBeLessThan(500)
    const report = await installer
    expect(report.applied.map((m) => m.name)).toEqual(['operator_indexes'])
    const valid = await watcher.query(
      `SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relnamespace = $1::regnamespace AND c.relname IN ('effects_created_idx', 'effects_target_created_idx') ORDER BY 1`,
      [cfg.schema],
    )
    expect(valid.rows).toEqual([
      { relname: 'effects_created_idx', indisvalid: true },
      { relname: 'effects_target_created_idx', indisvalid: true },
    ])
  })

  it('an index a failed build left invalid is dropped and built again', async () => {
    const cfg = config()
    await install(cfg, { migrations: loadMigrations('postgres').filter((m) => m.transaction) })
    const reader = await longReader(cfg.schema)
    const builder = await connect('a build that fails')
    const build = builder.query(`CREATE INDEX CONCURRENTLY effects_created_idx ON "${cfg.schema}".effects (created_at, id)`).catch((e: { code?: string }) => e.code)
    const admin = await connect()
    // Cancelled while it waits for the reader: the index stays, marked invalid.
    for (let i = 0; i < 100; i++) {
      const { rows } = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [pid(builder)])
      if (rows.length) break
      await new Promise((r) => setTimeout(r, 50))
    }
    await admin.query('SELECT pg_cancel_backend($1)', [pid(builder)])
    expect(await build).toBe('57014')
    await reader.end()
    const validity = async () =>
      (await admin.query(`SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`, [`"${cfg.schema}".effects_created_idx`])).rows[0]?.indisvalid
    expect(await validity()).toBe(false)
    await install(cfg)
    expect(await validity()).toBe(true)
  })
})

describe('what each shipped migration says it locks', () => {
  /** Relations (tables, views) of the schema, by oid, before the migration: new ones lock nothing anyone waits on. */
  async function existing(c: pg.Client, schema: string): Promise<Map<number, string>> {
    const { rows } = await c.query<{ oid: number; relname: string }>(`SELECT oid::int, relname FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'p', 'v', 'm')`, [schema])
    return new Map(rows.map((r) => [r.oid, r.relname]))
  }
  /** Every lock but ACCESS SHARE (which holds up nothing short of ACCESS EXCLUSIVE): what a declaration must name. */
  const mattering = (locks: { relation: string; mode: string }[]) => locks.filter((l) => l.mode !== 'AccessShareLock').map((l) => `${l.relation} ${l.mode}`).sort()

  for (const m of loadMigrations('postgres').slice(1)) {
    it(`${m.version} ${m.name}: declares exactly the locks PostgreSQL takes on existing tables and views`, async () => {
      const cfg = config()
      const before = loadMigrations('postgres').filter((x) => x.version < m.version)
      await install(cfg, { migrations: before })
      const c = await connect()
      const relations = await existing(c, cfg.schema)
      const declared = m.locks.filter((l) => l.mode !== 'none').map((l) => ({ relation: l.relation, mode: pgLockMode(l.mode) }))
      const taken: { relation: string; mode: string }[] = []
      const heldNow = async (pid: number) =>
        (await (await connect()).query<{ relation: number; mode: string }>(`SELECT relation::int, mode FROM pg_locks WHERE pid = $1 AND granted AND relation IS NOT NULL`, [pid])).rows
          .filter((l) => relations.has(l.relation))
          .map((l) => ({ relation: relations.get(l.relation)!, mode: l.mode }))
      if (m.transaction) {
        await c.query('BEGIN')
        await c.query(withSchema(m.sql, cfg.schema))
        taken.push(...(await heldNow(pid(c))))
        await c.query('ROLLBACK')
      } else {
        // Each statement, caught while it waits for an older snapshot (the locks it holds then are the ones it holds throughout).
        for (const statement of statementsOf(withSchema(m.sql, cfg.schema))) {
          const reader = await longReader(cfg.schema)
          const running = c.query(statement)
          let seen: { relation: string; mode: string }[] = []
          for (let i = 0; i < 100 && seen.length === 0; i++) {
            await new Promise((r) => setTimeout(r, 50))
            seen = await heldNow(pid(c))
          }
          taken.push(...seen)
          await reader.end()
          await running
        }
      }
      expect([...new Set(mattering(taken))]).toEqual([...new Set(mattering(declared))])
      // One that says it locks nothing ("-- lock: none", e.g. a new function) is held to taking nothing; the others name what they take.
      expect(declared.length > 0).toBe(!m.locks.some((l) => l.mode === 'none'))
    })
  }
})
