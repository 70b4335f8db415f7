/**
 * The notarized schedules (randomized-notary.test.ts) with the notary's log in
 * PostgreSQL: the embedded server of test/helpers, the notary's schema
 * (`interlock_notary`) beside the journal's (`interlock`) in one database.
 * The notary goes down with its pool and comes back on a new one from the
 * same tables. The same invariants (run-notary-schedule.ts) and safe-state
 * cases: the notary down and restarted mid-run, forged, untrusted and
 * replayed records, late requests after an abort, a tampered answer.
 * INTERLOCK_NOTARY_SCHEDULES_PG sets how many (default 200; seeds 2,000,001
 * on, so they are not the SQLite files' seeds again).
 */
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { openPostgresNotaryStore } from '../../src/core/notary/postgres/pg-notary-store.js'
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js'
import { notaryBatchTest } from './notary-batch-test.js'

const SCHEDULES = Number(process.env.INTERLOCK_NOTARY_SCHEDULES_PG ?? 200)

describe('randomized schedules against a notarized tier-3 target, the notary on PostgreSQL', () => {
  let db: TestDatabase | undefined
  afterAll(async () => {
    await db?.drop()
  })
  notaryBatchTest(
    2_000_001,
    SCHEDULES,
    async () => {
      db = await createTestDatabase()
      const url = db.url
      return {
        journal: { kind: 'postgres', url, schema: 'interlock' },
        notaryStore: () => openPostgresNotaryStore({ url, schema: 'interlock_notary', maxConnections: 4 }),
      }
    },
    'notarized tier 3, notary on PostgreSQL',
  )

  it("the schedules' records are in PostgreSQL: the notary's decisions (claims and aborts) beside the journal's effects", async () => {
    const client = new pg.Client({ connectionString: db!.url })
    await client.connect()
    try {
      const decisions = await client.query<{ decision: string; n: string }>('SELECT decision, count(*) AS n FROM interlock_notary.notary_decisions GROUP BY decision ORDER BY decision')
      const counts = Object.fromEntries(decisions.rows.map((r) => [r.decision, Number(r.n)]))
      expect(counts.claim).toBeGreaterThan(SCHEDULES * 0.5)
      expect(counts.abort).toBeGreaterThan(SCHEDULES * 0.1)
      const effects = await client.query<{ n: string }>('SELECT count(*) AS n FROM interlock.effects')
      expect(Number(effects.rows[0]!.n)).toBeGreaterThan(SCHEDULES)
    } finally {
      await client.end()
    }
  })
})
