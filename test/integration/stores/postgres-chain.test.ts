/**
 * The PostgreSQL store writes a chain (several states of one effect, all or
 * nothing: Store.append) whole: every state its own record, and the effect's
 * row once, at the chain's last state (schemas/postgres/0004_append_chain.sql).
 * What each append writes is counted by row triggers on the tables, so any
 * path the store takes is seen.
 */
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { Gate } from '../../../src/core/gate.js'
import { canonicalJson } from '../../../src/core/canonical-json.js'
import { effectJson } from '../../../src/core/effect.js'
import { install } from '../../../src/core/stores/migrate.js'
import { loadMigrations } from '../../../src/core/stores/migrations.js'
import { quoteSchema } from '../../../src/core/stores/postgres/identifier.js'
import { openPostgresStore } from '../../../src/core/stores/postgres/open.js'
import { openStore } from '../../../src/core/stores/open.js'
import { ChainVerifier } from '../../../src/core/stores/record-hash.js'
import { GENESIS_HASH, type AppendRequest, type Store } from '../../../src/core/stores/store.js'
import type { EffectTarget } from '../../../src/core/targets/target.js'
import { allRecords, drive, effect, move, ok, propose } from '../../contract/fixtures.js'
import { useTestDatabase } from '../../helpers/pg.js'

const pgt = useTestDatabase()

let n = 0
/** A schema of its own, with every row written to effects, journal_records and journals counted. */
async function counted(): Promise<{ schema: string; config: { kind: 'postgres'; url: string; schema: string }; writes(): Promise<Record<string, number>>; reset(): Promise<void> }> {
  const schema = `chain_${++n}`
  const config = { kind: 'postgres' as const, url: pgt.db.url, schema }
  await install(config)
  const s = quoteSchema(schema)
  await pgt.admin.query(`CREATE TABLE ${s}.row_writes (tbl text, op text)`)
  await pgt.admin.query(`CREATE FUNCTION ${s}.count_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO ${s}.row_writes VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $$`)
  for (const t of ['effects', 'journal_records', 'journals']) {
    await pgt.admin.query(`CREATE TRIGGER count_write AFTER INSERT OR UPDATE OR DELETE ON ${s}.${t} FOR EACH ROW EXECUTE FUNCTION ${s}.count_write()`)
  }
  return {
    schema,
    config,
    writes: async () => {
      const { rows } = await pgt.admin.query<{ k: string; n: number }>(`SELECT tbl || ' ' || op AS k, count(*)::int AS n FROM ${s}.row_writes GROUP BY 1`)
      return Object.fromEntries(rows.map((r) => [r.k, r.n]))
    },
    reset: async () => void (await pgt.admin.query(`TRUNCATE ${s}.row_writes`)),
  }
}

const proposeChain = (e: ReturnType<typeof effect>): AppendRequest[] => [
  propose(e, 1),
  { ...move(e, 'PROPOSED', 'AUTHORIZED'), chained: true },
  { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true },
]

async function verifies(store: Store): Promise<void> {
  const v = new ChainVerifier()
  for (const r of await allRecords(store)) v.check(r)
}

describe('PostgreSQL: a chain of one effect is written whole', () => {
  it("a proposal with AUTHORIZED and DISPATCHED: three records, the effect's row inserted once at DISPATCHED, the head written once", async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    await drive(store, effect('t1', 0), 'PROPOSED')
    await c.reset()
    const e = effect('t1', 1)
    const [p, a, d] = (await store.append(proposeChain(e))).map(ok)
    expect([p!.seq, a!.seq, d!.seq]).toEqual([2, 3, 4])
    expect(await c.writes()).toEqual({ 'journal_records INSERT': 3, 'effects INSERT': 1, 'journals UPDATE': 1 })
    expect(await store.get(e.id)).toMatchObject({ state: 'DISPATCHED', seq: 4, tier: 1, createdAt: p!.at, updatedAt: d!.at })
    expect(await store.history(e.id)).toEqual([p, a, d])
    await verifies(store)
    await store.close()
  })

  it("a chain of moves (AUTHORIZED, then DISPATCHED): the effect's row updated once", async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const e = effect('t1', 1)
    await drive(store, e, 'PROPOSED')
    await c.reset()
    const results = await store.append([move(e, 'PROPOSED', 'AUTHORIZED'), { ...move(e, 'AUTHORIZED', 'DISPATCHED', { x: 'é' }), chained: true }])
    expect(results.map((r) => r.ok && r.record.seq)).toEqual([2, 3])
    expect(await c.writes()).toEqual({ 'journal_records INSERT': 2, 'effects UPDATE': 1, 'journals UPDATE': 1 })
    expect(await store.get(e.id)).toMatchObject({ state: 'DISPATCHED', seq: 3, detail: { x: 'é' } })
    await verifies(store)
    await store.close()
  })

  it('a chain that loses writes nothing, and every request of it is answered with the effect as it stands', async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const e = effect('t1', 1)
    await drive(store, e, 'AUTHORIZED', 1)
    await c.reset()
    const current = await store.get(e.id)
    expect(await store.append(proposeChain(e))).toEqual([0, 1, 2].map(() => ({ ok: false, current })))
    const stale = await store.append([move(e, 'PROPOSED', 'AUTHORIZED'), { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true }])
    expect(stale).toEqual([0, 1].map(() => ({ ok: false, current })))
    expect(await c.writes()).toEqual({})
    await store.close()
  })

  it('a chain under a lease the effect no longer holds is fenced off whole', async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const e = effect('t1', 1)
    await drive(store, e, 'PROPOSED')
    const [claimed] = await store.claim({ relay: 'r1', limit: 1, leaseMs: 60_000 })
    const lease = claimed!.lease
    await c.reset()
    const stale = { relay: 'r1', token: lease.token + 1000 }
    const chain = (l: typeof lease): AppendRequest[] => [
      { ...move(e, 'PROPOSED', 'AUTHORIZED'), lease: l },
      { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true, lease: l },
    ]
    expect((await store.append(chain(stale))).map((r) => r.ok)).toEqual([false, false])
    expect(await c.writes()).toEqual({})
    expect((await store.append(chain(lease))).map((r) => r.ok)).toEqual([true, true])
    expect((await store.get(e.id))?.state).toBe('DISPATCHED')
    await store.close()
  })

  it('the function refuses states and data of different lengths, writing nothing', async () => {
    const c = await counted()
    const s = quoteSchema(c.schema)
    const e = effect('t1', 1)
    const err = await pgt.admin
      .query(`SELECT ${s}.append_chain($1, NULL, ARRAY['PROPOSED','AUTHORIZED'], ARRAY['{}'], 't1', 'svc', 'do', 1::smallint, '{}', NULL, NULL, NULL, 'x', $2, $3)`, [
        e.id,
        '0'.repeat(64),
        c.schema,
      ])
      .catch((x: { code?: string }) => x)
    expect((err as { code?: string }).code).toBe('22023')
    expect(await c.writes()).toEqual({})
  })
})

describe('PostgreSQL: a batch holding chains (group commit) writes each chain whole, and each effect once', () => {
  it("several callers' chains and single requests in one call: every state its own record, each effect's row written once", async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const [x, y, z, w] = [effect('t1', 1), effect('t1', 2), effect('t2', 3), effect('t2', 4)]
    await drive(store, z, 'PROPOSED')
    await drive(store, w, 'AUTHORIZED')
    await c.reset()
    const results = await store.append([
      ...proposeChain(x),
      ...proposeChain(y),
      move(z, 'PROPOSED', 'AUTHORIZED'),
      { ...move(z, 'AUTHORIZED', 'REJECTED', { violations: ['moved'] }), chained: true },
      move(w, 'AUTHORIZED', 'DISPATCHED'),
    ])
    expect(results.map((r) => r.ok && [r.record.journal, r.record.seq])).toEqual([
      ['t1', 1], ['t1', 2], ['t1', 3], ['t1', 4], ['t1', 5], ['t1', 6], ['t2', 4], ['t2', 5], ['t2', 6],
    ])
    expect(await c.writes()).toEqual({ 'journal_records INSERT': 9, 'effects INSERT': 2, 'effects UPDATE': 2, 'journals INSERT': 1, 'journals UPDATE': 2 })
    expect((await store.get(x.id))?.state).toBe('DISPATCHED')
    expect(await store.get(z.id)).toMatchObject({ state: 'REJECTED', seq: 5, detail: { violations: ['moved'] } })
    expect((await store.get(w.id))?.state).toBe('DISPATCHED')
    await verifies(store)
    await store.close()
  })

  it('a request after a chain of the same effect sees where the chain left it; a proposal then a move of it, unchained, both go', async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const [e, f] = [effect('t1', 1), effect('t1', 2)]
    const results = await store.append([
      ...proposeChain(e),
      // A racer that believed AUTHORIZED: the chain made it DISPATCHED first.
      move(e, 'AUTHORIZED', 'REJECTED', { violations: ['late'] }),
      propose(f, 1),
      move(f, 'PROPOSED', 'AUTHORIZED'),
    ])
    expect(results.map((r) => r.ok)).toEqual([true, true, true, false, true, true])
    expect(results[3]).toMatchObject({ ok: false, current: { state: 'DISPATCHED', seq: 3 } })
    expect(await store.get(f.id)).toMatchObject({ state: 'AUTHORIZED', seq: 5, tier: 1 })
    await verifies(store)
    await store.close()
  })

  it('a chain whose later request is fenced off loses whole; the chains beside it are written', async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const [e, f] = [effect('t1', 1), effect('t1', 2)]
    await drive(store, e, 'PROPOSED')
    await drive(store, f, 'PROPOSED')
    const claimed = await store.claim({ relay: 'r1', limit: 2, leaseMs: 60_000 })
    const lease = (id: string) => claimed.find((x) => x.snapshot.effect.id === id)!.lease
    await c.reset()
    const results = await store.append([
      { ...move(e, 'PROPOSED', 'AUTHORIZED'), lease: lease(e.id) },
      { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true, lease: { relay: 'r1', token: lease(e.id).token + 1000 } },
      { ...move(f, 'PROPOSED', 'AUTHORIZED'), lease: lease(f.id) },
      { ...move(f, 'AUTHORIZED', 'DISPATCHED'), chained: true, lease: lease(f.id) },
    ])
    expect(results.map((r) => r.ok)).toEqual([false, false, true, true])
    expect(results[0]).toMatchObject({ ok: false, current: { state: 'PROPOSED', seq: 1 } })
    expect(await c.writes()).toEqual({ 'journal_records INSERT': 2, 'effects UPDATE': 1, 'journals UPDATE': 1 })
    await verifies(store)
    await store.close()
  })
})

describe("PostgreSQL: two callers' chains of one effect in one batch", () => {
  it('the second is checked against where the first left the effect, and loses whole', async () => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const [e, f] = [effect('t1', 1), effect('t1', 2)]
    await drive(store, e, 'PROPOSED')
    await c.reset()
    const results = await store.append([
      move(e, 'PROPOSED', 'AUTHORIZED'),
      { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true },
      // A racer that read PROPOSED too: its chain loses as a whole, though AUTHORIZED → REJECTED alone would follow on.
      move(e, 'PROPOSED', 'AUTHORIZED'),
      { ...move(e, 'AUTHORIZED', 'REJECTED', { violations: ['late'] }), chained: true },
      ...proposeChain(f),
    ])
    expect(results.map((r) => r.ok)).toEqual([true, true, false, false, true, true, true])
    expect(results[2]).toMatchObject({ ok: false, current: { state: 'DISPATCHED', seq: 3 } })
    expect(results[3]).toMatchObject({ ok: false, current: { state: 'DISPATCHED', seq: 3 } })
    expect(await c.writes()).toEqual({ 'journal_records INSERT': 5, 'effects UPDATE': 1, 'effects INSERT': 1, 'journals UPDATE': 1 })
    await verifies(store)
    await store.close()
  })

  it('a chained request that does not continue the state before it fails its chain; one naming another effect is refused, writing nothing', async () => {
    const c = await counted()
    const s = quoteSchema(c.schema)
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const [e, f] = [effect('t1', 1), effect('t1', 2)]
    await drive(store, e, 'PROPOSED')
    await drive(store, f, 'PROPOSED')
    await c.reset()
    const call = (ids: string[], from: string[], to: string[], chained: boolean[]) => {
      const nulls = ids.map(() => null)
      return pgt.admin.query<{ ok: boolean }>(
        `SELECT ok FROM ${s}.append_chains($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::smallint[],
           $9::text[], $10::text[], $11::bigint[], $12::text[], $13::boolean[], $14, $15, $16)`,
        [ids, from, to, ids.map(() => '{}'), nulls, nulls, nulls, nulls, nulls, nulls, nulls, nulls, chained, new Date().toISOString(), GENESIS_HASH, c.schema],
      )
    }
    // f's second request says it starts at PROPOSED, not where the first leaves it (AUTHORIZED): the chain is not written.
    const { rows } = await call([e.id, e.id, f.id, f.id], ['PROPOSED', 'AUTHORIZED', 'PROPOSED', 'PROPOSED'], ['AUTHORIZED', 'DISPATCHED', 'AUTHORIZED', 'DISPATCHED'], [false, true, false, true])
    expect(rows.map((r) => r.ok)).toEqual([true, true, false, false])
    expect((await store.get(f.id))?.state).toBe('PROPOSED')
    await c.reset()
    const err = await call([e.id, f.id], ['DISPATCHED', 'PROPOSED'], ['COMMITTED', 'AUTHORIZED'], [false, true]).catch((x: { code?: string; message?: string }) => x)
    expect(err).toMatchObject({ code: '22023', message: expect.stringContaining('does not continue') })
    expect(await c.writes()).toEqual({})
    await verifies(store)
    await store.close()
  })
})

describe('PostgreSQL: a move locks its effect before its journal', () => {
  // append() locks effects, then heads: a move that took the head first could deadlock with it.
  it.each([
    ['one step', (e: ReturnType<typeof effect>): AppendRequest[] => [move(e, 'PROPOSED', 'AUTHORIZED')]],
    ['a chain', (e: ReturnType<typeof effect>): AppendRequest[] => [move(e, 'PROPOSED', 'AUTHORIZED'), { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true }]],
  ])('%s waiting for its effect holds nothing of the journal: other effects of it go on meanwhile', async (_, requests) => {
    const c = await counted()
    const s = quoteSchema(c.schema)
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const [e, f] = [effect('t1', 1), effect('t1', 2)]
    await drive(store, e, 'PROPOSED')
    await drive(store, f, 'PROPOSED')
    const holder = new pg.Client({ connectionString: pgt.db.url })
    const other = new pg.Client({ connectionString: pgt.db.url })
    await holder.connect()
    await other.connect()
    let waiting: Promise<unknown> | undefined
    try {
      await holder.query('BEGIN')
      await holder.query(`SELECT 1 FROM ${s}.effects WHERE id = $1 FOR UPDATE`, [e.id])
      waiting = store.append(requests(e))
      let waits = 0
      for (let i = 0; i < 200 && waits === 0; i++) {
        await new Promise((r) => setTimeout(r, 25))
        waits = (await pgt.admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%append_%'`)).rows[0].n
      }
      expect(waits).toBe(1)
      // The journal's head is free: another effect of the journal moves while the first waits.
      await other.query('BEGIN')
      expect((await other.query(`SELECT head_seq FROM ${s}.journals WHERE journal = 't1' FOR UPDATE NOWAIT`)).rows).toHaveLength(1)
      await other.query('ROLLBACK')
      expect((await store.append([move(f, 'PROPOSED', 'AUTHORIZED')]))[0]!.ok).toBe(true)
    } finally {
      await other.end()
      await holder.query('ROLLBACK')
      await holder.end()
    }
    expect(((await waiting) as { ok: boolean }[]).every((r) => r.ok)).toBe(true)
    await verifies(store)
    await store.close()
  })

  it.each([
    ['one step', (e: ReturnType<typeof effect>): AppendRequest[] => [move(e, 'PROPOSED', 'AUTHORIZED')]],
    ['a chain', (e: ReturnType<typeof effect>): AppendRequest[] => [move(e, 'PROPOSED', 'AUTHORIZED'), { ...move(e, 'AUTHORIZED', 'DISPATCHED'), chained: true }]],
  ])("%s of an effect whose journal lost its head row by hand is refused, naming it; nothing is written", async (_, requests) => {
    const c = await counted()
    const store = await openPostgresStore(c.config, { autoInstall: false })
    const e = effect('t1', 1)
    await drive(store, e, 'PROPOSED')
    await pgt.admin.query(`DELETE FROM ${quoteSchema(c.schema)}.journals WHERE journal = 't1'`)
    await c.reset()
    await expect(store.append(requests(e))).rejects.toThrow(`effect ${e.id}'s journal has no head row`)
    expect(await c.writes()).toEqual({})
    await store.close()
  })
})

describe("PostgreSQL: the gate's effect writes its row once per commit", () => {
  const noop: EffectTarget = { name: 'noop', tier: 1, validatePremises: async () => [], apply: async (e) => ({ ok: e.id }) }

  it('an effect no rule holds: four records, the effect inserted at DISPATCHED and updated at COMMITTED, the head moved twice', async () => {
    const c = await counted()
    const store = await openStore(c.config)
    const gate = new Gate({ store, targets: [noop] })
    await gate.submit({ thread: 'g', target: 'noop', action: 'noop', args: { i: 0 } })
    await c.reset()
    const out = await gate.submit({ thread: 'g', target: 'noop', action: 'noop', args: { i: 1 } })
    expect(out.status).toBe('committed')
    expect(await c.writes()).toEqual({ 'journal_records INSERT': 4, 'effects INSERT': 1, 'effects UPDATE': 1, 'journals UPDATE': 2 })
    await verifies(store)
    await gate.close()
    await store.close()
  })
})

describe('PostgreSQL: upgrading to 0004 under effects in flight', () => {
  it('effects journaled by the schema before it move on through the new functions; the journals verify', async () => {
    const schema = `chain_upgrade_${++n}`
    const config = { kind: 'postgres' as const, url: pgt.db.url, schema }
    await install(config, { migrations: loadMigrations('postgres').filter((m) => m.version < 4) })
    const s = quoteSchema(schema)
    const at = new Date().toISOString()
    // What the release before wrote: proposals and steps through its append_step().
    const step = (id: string, from: string | null, to: string, data: string, e?: ReturnType<typeof effect>) =>
      pgt.admin.query<{ r: string | null }>(`SELECT ${s}.append_step($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, NULL, $10, $11, $12) AS r`, [
        id, from, to, data, e?.thread ?? null, e?.target ?? null, e?.action ?? null, e ? 1 : null, e ? canonicalJson(effectJson(e)) : null, at, GENESIS_HASH, schema,
      ])
    const [e1, e2, e3] = [effect('t1', 1), effect('t1', 2), effect('t2', 3)]
    for (const e of [e1, e2, e3]) await step(e.id, null, 'PROPOSED', `{"effect":${canonicalJson(effectJson(e))},"tier":1}`, e)
    await step(e2.id, 'PROPOSED', 'AUTHORIZED', '{}')
    await step(e3.id, 'PROPOSED', 'AUTHORIZED', '{}')
    await step(e3.id, 'AUTHORIZED', 'DISPATCHED', '{}')

    const report = await install(config)
    expect(report.applied.map((m) => m.name)).toEqual(['append_chain', 'append_head_guard', 'callers', 'seals'])
    const store = await openPostgresStore(config, { autoInstall: false })
    const chained = await store.append([move(e1, 'PROPOSED', 'AUTHORIZED'), { ...move(e1, 'AUTHORIZED', 'DISPATCHED'), chained: true }])
    expect(chained.map((r) => r.ok && r.record.seq)).toEqual([4, 5])
    expect((await store.append([move(e2, 'AUTHORIZED', 'DISPATCHED')]))[0]).toMatchObject({ ok: true, record: { seq: 6 } })
    expect((await store.append([move(e3, 'DISPATCHED', 'COMMITTED', { receipt: { ok: true } })]))[0]).toMatchObject({ ok: true, record: { journal: 't2', seq: 4 } })
    const e4 = effect('t2', 4)
    expect((await store.append(proposeChain(e4))).map((r) => r.ok && r.record.seq)).toEqual([5, 6, 7])
    expect((await store.get(e3.id))?.state).toBe('COMMITTED')
    expect((await store.get(e4.id))?.state).toBe('DISPATCHED')
    await verifies(store)
    await store.close()
  })
})

describe('PostgreSQL: upgrading to 0005 under effects in flight', () => {
  it("effects journaled by 0004's functions move on through append() and append_each() as 0005 redefines them; the journals verify; a head deleted by hand is then refused", async () => {
    const schema = `guard_upgrade_${++n}`
    const config = { kind: 'postgres' as const, url: pgt.db.url, schema }
    await install(config, { migrations: loadMigrations('postgres').filter((m) => m.version < 5) })
    const s = quoteSchema(schema)
    const at = new Date().toISOString()
    // What 0004 wrote: proposals and steps through its append_step(), a chain through append_chain().
    const step = (id: string, from: string | null, to: string, data: string, e?: ReturnType<typeof effect>) =>
      pgt.admin.query<{ r: string | null }>(`SELECT ${s}.append_step($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, NULL, $10, $11, $12) AS r`, [
        id, from, to, data, e?.thread ?? null, e?.target ?? null, e?.action ?? null, e ? 1 : null, e ? canonicalJson(effectJson(e)) : null, at, GENESIS_HASH, schema,
      ])
    const [e1, e2, e3, e4] = [effect('g1', 1), effect('g1', 2), effect('g2', 3), effect('g3', 4)]
    for (const e of [e1, e2, e3, e4]) await step(e.id, null, 'PROPOSED', `{"effect":${canonicalJson(effectJson(e))},"tier":1}`, e)
    await step(e2.id, 'PROPOSED', 'AUTHORIZED', '{}')
    await step(e3.id, 'PROPOSED', 'AUTHORIZED', '{}')
    await step(e3.id, 'AUTHORIZED', 'DISPATCHED', '{}')

    const report = await install(config)
    expect(report.applied.map((m) => m.name)).toEqual(['append_head_guard', 'callers', 'seals'])
    const store = await openPostgresStore(config, { autoInstall: false })
    // An unchained batch of distinct effects: append().
    const batch = await store.append([move(e1, 'PROPOSED', 'AUTHORIZED'), move(e2, 'AUTHORIZED', 'DISPATCHED'), move(e3, 'DISPATCHED', 'COMMITTED', { receipt: { ok: true } })])
    expect(batch.map((r) => r.ok && `${r.record.journal} ${r.record.seq}`)).toEqual(['g1 4', 'g1 5', 'g2 4'])
    // One naming an effect twice: append_each().
    const twice = await store.append([move(e1, 'AUTHORIZED', 'DISPATCHED'), move(e1, 'DISPATCHED', 'COMMITTED', { receipt: { ok: true } })])
    expect(twice.map((r) => r.ok && r.record.seq)).toEqual([6, 7])
    expect((await store.get(e1.id))?.state).toBe('COMMITTED')
    expect((await store.get(e3.id))?.state).toBe('COMMITTED')
    await verifies(store)
    // The guard the upgrade brought: a journal whose head was deleted by hand is refused, naming the effect.
    await pgt.admin.query(`DELETE FROM ${s}.journals WHERE journal = 'g3'`)
    const refused = await store.append([move(e2, 'DISPATCHED', 'COMMITTED', { receipt: { ok: true } }), move(e4, 'PROPOSED', 'AUTHORIZED')]).catch((x: unknown) => String(x))
    expect(refused).toContain(`effect ${e4.id}'s journal has no head row`)
    expect((await store.get(e2.id))?.state).toBe('DISPATCHED')
    await store.close()
  })
})
