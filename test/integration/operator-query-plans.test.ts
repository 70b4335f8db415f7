/**
 * What operators run must not read the whole outbox: `outbox list` (newest
 * first, a page at a time; without --state, by --target, between --since and
 * --until) and `outbox status`'s counts. The statements each store sends are
 * captured as sent and planned by the database itself (EXPLAIN; EXPLAIN
 * QUERY PLAN), on a table large enough that a scan would be the planner's
 * choice were there no index for it. docs/dbas.md, "What the commands ask of
 * the database".
 */
import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { StoreConfig } from '../../src/core/config/types.js'
import { install } from '../../src/core/stores/migrate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { ListFilter, Store } from '../../src/core/stores/store.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'

const ROWS = 30_000
const SINCE = '2026-03-01T00:00:00.000Z'
const UNTIL = '2026-03-02T00:00:00.000Z'
/** What the operator commands ask the store for. */
const LISTINGS: Record<string, ListFilter> = {
  'outbox list (no --state)': { limit: 50 },
  'outbox list --target': { target: 'target-3', limit: 50 },
  'outbox list --since --until': { since: SINCE, until: UNTIL, limit: 50 },
}

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  Plans?: PlanNode[]
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)]

describe('PostgreSQL', () => {
  let db: TestDatabase
  let admin: pg.Client
  let store: Store
  const SCHEMA = 'plans'

  beforeAll(async () => {
    db = await createTestDatabase()
    const config: StoreConfig = { kind: 'postgres', url: db.url, schema: SCHEMA }
    await install(config)
    admin = new pg.Client({ connectionString: db.url })
    await admin.connect()
    // The test server commits asynchronously; VACUUM marks a page all-visible (what an index-only scan
    // needs) only once the commits on it are flushed, as they are at once on a production server.
    await admin.query('SET synchronous_commit = on')
    // A settled outbox, over a year, 20 targets: rows written directly, as the plans depend on the table's shape only.
    await admin.query(
      `INSERT INTO "${SCHEMA}".effects (id, journal, thread, target, action, tier, effect, state, last_seq, detail, created_at, updated_at)
       SELECT md5(g::text) || md5((g + 1)::text), 'j' || (g % 500), 'j' || (g % 500), 'target-' || (g % 20), 'act', 1,
              json_build_object('args', json_build_object('n', g, 'pad', repeat('x', 400))),
              (ARRAY['COMMITTED','COMMITTED','COMMITTED','FAILED','REJECTED','HELD','AMBIGUOUS','PROPOSED'])[1 + g % 8],
              g, '{}', timestamptz '2026-01-01' + g * interval '17 minutes', timestamptz '2026-01-01' + g * interval '17 minutes'
       FROM generate_series(1, $1) AS g`,
      [ROWS],
    )
    await admin.query(`VACUUM ANALYZE "${SCHEMA}".effects`)
    store = await openStore(config)
  })
  afterAll(async () => {
    await store?.close()
    await admin?.end()
    await db?.drop()
  })

  /** The statements `run` sends through node-postgres, with their parameters. */
  async function sent(run: () => Promise<unknown>): Promise<{ text: string; values: unknown[] }[]> {
    const seen: { text: string; values: unknown[] }[] = []
    const original = pg.Client.prototype.query
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const q = args[0] as string | { text: string; values?: unknown[] }
      if (typeof q === 'object' && q && /FROM\s+\S*effects/.test(q.text)) seen.push({ text: q.text, values: q.values ?? [] })
      return (original as (...a: unknown[]) => unknown).apply(this, args) as never
    })
    try {
      await run()
    } finally {
      spy.mockRestore()
    }
    return seen
  }

  async function plan(text: string, values: unknown[]): Promise<PlanNode[]> {
    const { rows } = await admin.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>({ text: `EXPLAIN (FORMAT JSON) ${text}`, values })
    return nodes(rows[0]!['QUERY PLAN'][0]!.Plan)
  }

  for (const [name, filter] of Object.entries(LISTINGS)) {
    it(`${name}: reads a page along an index, no scan of effects and no sort`, async () => {
      const statements = await sent(() => store.list(filter))
      expect(statements).toHaveLength(1)
      const steps = await plan(statements[0]!.text, statements[0]!.values)
      expect(steps.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name'])).toEqual([])
      expect(steps.map((n) => n['Node Type'])).not.toContain('Sort')
      expect(steps.some((n) => n['Relation Name'] === 'effects' && /Index/.test(n['Node Type']))).toBe(true)
    })
  }

  it('an effect id prefix (outbox show 3f9a0c): a range of the primary key, no scan of effects', async () => {
    const statements = await sent(() => store.list({ idPrefix: '3f9a0c', limit: 11 }))
    expect(statements).toHaveLength(1)
    const steps = await plan(statements[0]!.text, statements[0]!.values)
    expect(steps.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name'])).toEqual([])
    expect(steps.some((n) => n['Relation Name'] === 'effects' && /Index/.test(n['Node Type']) && n['Index Name'] === 'effects_pkey')).toBe(true)
  })

  it('outbox status: the counts read the state index alone, never the table', async () => {
    const statements = await sent(() => store.countByState())
    expect(statements).toHaveLength(1)
    // An index-only scan needs the visibility map, which VACUUM sets only for pages no open
    // snapshot of this database can still see as changing: on a loaded test server one VACUUM
    // may not get there. A production table is vacuumed by autovacuum (docs/dbas.md says so).
    let reads: PlanNode[] = []
    for (let attempt = 1; attempt <= 5; attempt++) {
      reads = (await plan(statements[0]!.text, statements[0]!.values)).filter((n) => n['Relation Name'] === 'effects')
      if (reads[0]?.['Node Type'] === 'Index Only Scan') break
      await admin.query(`VACUUM "${SCHEMA}".effects`)
    }
    expect(reads.map((n) => n['Node Type'])).toEqual(['Index Only Scan'])
    expect(reads[0]!['Index Name']).toBe('effects_state_idx')
  })
})

describe('SQLite', () => {
  let dir: string
  let store: Store
  let db: Database.Database

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-plans-'))
    const config: StoreConfig = { kind: 'sqlite', path: join(dir, 'journal.db') }
    await install(config)
    store = await openStore(config)
    db = new Database(config.path)
  })
  afterAll(async () => {
    await store?.close()
    db?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** The statements `run` prepares on the store's connection. */
  async function prepared(run: () => Promise<unknown>): Promise<string[]> {
    const seen: string[] = []
    const proto = Database.prototype as unknown as { prepare: (sql: string) => unknown }
    const original = proto.prepare
    proto.prepare = function (this: unknown, sql: string) {
      if (/FROM effects/.test(sql)) seen.push(sql)
      return original.call(this, sql)
    }
    try {
      await run()
    } finally {
      proto.prepare = original
    }
    return seen
  }

  const queryPlan = (sql: string): string[] =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 'x')) as { detail: string }[]).map((r) => r.detail)

  for (const [name, filter] of Object.entries(LISTINGS)) {
    it(`${name}: reads a page along an index, no scan of effects and no sort`, async () => {
      const statements = await prepared(() => store.list(filter))
      expect(statements).toHaveLength(1)
      const steps = queryPlan(statements[0]!)
      expect(steps.filter((d) => /^SCAN effects$/.test(d) || /TEMP B-TREE/.test(d))).toEqual([])
      expect(steps.some((d) => /effects USING (COVERING )?INDEX/.test(d))).toBe(true)
    })
  }

  it('outbox status: the counts read indexes alone', async () => {
    // The store prepares its counting statements as it opens.
    const statements = await prepared(async () => {
      const s = await openStore({ kind: 'sqlite', path: join(dir, 'journal.db') })
      try {
        await s.countByState()
      } finally {
        await s.close()
      }
    })
    const counts = statements.filter((sql) => /count\(\*\)/.test(sql) && /GROUP BY state/.test(sql))
    expect(counts.length).toBeGreaterThan(0)
    for (const sql of counts) expect(queryPlan(sql).filter((d) => /^SCAN effects$/.test(d))).toEqual([])
  })
})
