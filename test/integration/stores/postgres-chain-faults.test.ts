/**
 * The PostgreSQL batch appends (schemas/postgres/0004_append_chain.sql, and
 * append() and append_each() as 0005_append_head_guard.sql redefines them) when
 * something goes wrong in the middle of one: a journal whose head row was
 * deleted by hand, a statement cancelled by statement_timeout while it waits
 * for a lock, the connection killed (pg_terminate_backend) mid-statement.
 * Whatever happens, a batch is written whole or not at all, every caller in
 * it learns so, and the journal's invariants hold afterwards
 * (test/helpers/pg-journal-invariants.ts).
 */
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import type { Effect } from '../../../src/core/effect.js'
import { StoreUnavailableError } from '../../../src/core/errors.js'
import { install } from '../../../src/core/stores/migrate.js'
import { createPool } from '../../../src/core/stores/postgres/connect.js'
import { quoteSchema } from '../../../src/core/stores/postgres/identifier.js'
import type { PgSessionLimits } from '../../../src/core/stores/postgres/session-limits.js'
import { PostgresStore } from '../../../src/core/stores/postgres/store.js'
import { withGroupCommit } from '../../../src/core/stores/group-commit.js'
import type { AppendRequest, Store } from '../../../src/core/stores/store.js'
import { drive, effect, move, propose } from '../../contract/fixtures.js'
import { journalViolations } from '../../helpers/pg-journal-invariants.js'
import { useTestDatabase } from '../../helpers/pg.js'

const pgt = useTestDatabase()

let n = 0
async function fresh(limits?: PgSessionLimits): Promise<{ schema: string; s: string; store: Store }> {
  const schema = `faults_${++n}`
  await install({ kind: 'postgres', url: pgt.db.url, schema })
  const pool = createPool(pgt.db.url, { maxConnections: 4, limits })
  return { schema, s: quoteSchema(schema), store: withGroupCommit(new PostgresStore(pool, schema)) }
}

const chained = (r: AppendRequest): AppendRequest => ({ ...r, chained: true })
const gateChain = (e: Effect): AppendRequest[] => [propose(e, 1), chained(move(e, 'PROPOSED', 'AUTHORIZED')), chained(move(e, 'AUTHORIZED', 'DISPATCHED'))]
const relayChain = (e: Effect): AppendRequest[] => [move(e, 'PROPOSED', 'AUTHORIZED'), chained(move(e, 'AUTHORIZED', 'DISPATCHED'))]

async function tables(s: string): Promise<string> {
  const { rows } = await pgt.admin.query(
    `SELECT (SELECT json_agg(r ORDER BY journal, seq) FROM ${s}.journal_records r)::text AS records,
            (SELECT json_agg(e ORDER BY id) FROM ${s}.effects e)::text AS effects,
            (SELECT json_agg(h ORDER BY journal) FROM ${s}.journals h)::text AS heads`,
  )
  return JSON.stringify(rows[0])
}

/** Holds a row lock on one effect until released, so an append that needs it waits in the middle of its statement. */
async function lockEffect(s: string, id: string): Promise<{ release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: pgt.db.url })
  await c.connect()
  await c.query('BEGIN')
  await c.query(`SELECT 1 FROM ${s}.effects WHERE id = $1 FOR UPDATE`, [id])
  return { release: async () => void (await c.query('ROLLBACK').finally(() => c.end())) }
}

/** The backend running an append_chains() (or, named, another append function's) statement that waits for a lock, once there is one. */
async function waitingAppend(fn = 'append_chains'): Promise<number> {
  for (let i = 0; i < 400; i++) {
    const { rows } = await pgt.admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
      [`%.${fn}(%`],
    )
    if (rows[0]) return rows[0].pid
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`no ${fn}() statement came to wait for the lock`)
}

describe('PostgreSQL batch appends: faults in the middle of a batch', () => {
  it("a batch moving an effect whose journal's head row was deleted by hand is refused, naming it, like one chain; nothing of the batch is written", async () => {
    const { s, schema, store } = await fresh()
    const [e, f, g] = [effect('h1', 1), effect('h2', 1), effect('h1', 2)]
    await drive(store, e, 'PROPOSED')
    await drive(store, f, 'PROPOSED')
    await pgt.admin.query(`DELETE FROM ${s}.journals WHERE journal = 'h1'`)
    const before = await tables(s)
    // Three callers joined by group commit: one append_chains() call.
    const outcomes = await Promise.allSettled([store.append(relayChain(f)), store.append(relayChain(e)), store.append(gateChain(g))])
    for (const o of outcomes) {
      expect(o.status).toBe('rejected')
      expect(String((o as PromiseRejectedResult).reason)).toContain(`effect ${e.id}'s journal has no head row`)
    }
    expect(await tables(s)).toBe(before)
    // The journal is damaged by hand, not by an append: nothing else is wrong.
    expect(await journalViolations(pgt.admin, schema)).toEqual(['h1: records but no head'])
    await store.close()
  })

  it("a head row deleted by hand while the batch waits for its lock: the batch is refused, naming the effect, and no other journal's head is taken for it", async () => {
    const { s, schema, store } = await fresh()
    const [e, f] = [effect('m2', 1), effect('m3', 1)]
    await drive(store, e, 'PROPOSED')
    await drive(store, f, 'AUTHORIZED')
    const before = await tables(s)
    const deleter = new pg.Client({ connectionString: pgt.db.url })
    await deleter.connect()
    await deleter.query('BEGIN')
    await deleter.query(`SELECT 1 FROM ${s}.journals WHERE journal = 'm2' FOR UPDATE`)
    // e's chain would be written; f's (in the journal after e's) believes a state f has left, and loses.
    const pending = store.append([...relayChain(e), move(f, 'PROPOSED', 'AUTHORIZED')]).then(
      () => 'written',
      (x: unknown) => String(x),
    )
    try {
      await waitingAppend()
      await deleter.query(`DELETE FROM ${s}.journals WHERE journal = 'm2'`)
    } finally {
      await deleter.query('COMMIT').finally(() => deleter.end())
    }
    expect(await pending).toContain(`effect ${e.id}'s journal has no head row`)
    const { rows } = await pgt.admin.query<{ records: string }>(`SELECT count(*)::text AS records FROM ${s}.journal_records WHERE journal = 'm2'`)
    expect(rows[0]!.records).toBe('1')
    expect(await journalViolations(pgt.admin, schema)).toEqual(['m2: records but no head'])
    // Records and effects as before; only the head deleted by hand is gone.
    const withoutHeads = (t: string) => ({ ...(JSON.parse(t) as Record<string, unknown>), heads: undefined })
    expect(withoutHeads(await tables(s))).toEqual(withoutHeads(before))
    await store.close()
  })

  it('a batch cancelled by statement_timeout while it waits for a lock writes nothing; every caller in it is told; the same chains then go through once', async () => {
    const { s, schema, store } = await fresh({ statementTimeoutMs: 300 })
    const effects = Array.from({ length: 6 }, (_, i) => effect(`c${i % 2}`, i))
    for (const e of effects) await drive(store, e, 'PROPOSED')
    const held = await lockEffect(s, effects[3]!.id)
    const before = await tables(s)
    const outcomes = await Promise.allSettled([...effects.map((e) => store.append(relayChain(e))), store.append(gateChain(effect('c0', 99)))]).finally(held.release)
    for (const o of outcomes) {
      expect(o.status).toBe('rejected')
      expect(String((o as PromiseRejectedResult).reason)).toContain('statement timeout')
    }
    expect(await tables(s)).toBe(before)
    const again = await Promise.all(effects.map((e) => store.append(relayChain(e))))
    expect(again.flat().map((r) => r.ok)).toEqual(effects.flatMap(() => [true, true]))
    expect(await journalViolations(pgt.admin, schema)).toEqual([])
    await store.close()
  })

  it("a connection killed mid-statement: the batch's callers are told the outcome is unknown, nothing was written, and the pool goes on with a new connection", async () => {
    const { s, schema, store } = await fresh()
    const effects = Array.from({ length: 6 }, (_, i) => effect(`k${i % 2}`, i))
    for (const e of effects) await drive(store, e, 'PROPOSED')
    const held = await lockEffect(s, effects[4]!.id)
    const before = await tables(s)
    const pending = Promise.allSettled(effects.map((e) => store.append(relayChain(e))))
    try {
      await pgt.admin.query('SELECT pg_terminate_backend($1)', [await waitingAppend()])
    } finally {
      await held.release()
    }
    const outcomes = await pending
    for (const o of outcomes) {
      expect(o.status).toBe('rejected')
      expect((o as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError)
    }
    expect(await tables(s)).toBe(before)
    const again = await Promise.all(effects.map((e) => store.append(relayChain(e))))
    expect(again.flat().map((r) => r.ok)).toEqual(effects.flatMap(() => [true, true]))
    expect(await journalViolations(pgt.admin, schema)).toEqual([])
    await store.close()
  })
})

// A batch with no chain (a relay's outcome batch, or single requests of several callers joined by group
// commit) goes to append() (0001, redefined by schemas/postgres/0005_append_head_guard.sql), one naming an
// effect twice to append_each(), one request to append_step(), one chain to append_chain() (0004): each
// refuses as append_chains() does.
describe('PostgreSQL appends besides append_chains(): a journal whose head row was deleted by hand', () => {
  const outcome = (e: Effect) => move(e, 'DISPATCHED', 'COMMITTED', { receipt: { ok: true } })

  it("callers joined by group commit, one moving an effect whose journal's head row was deleted before: all are refused, naming it, not with a duplicate key; nothing is written", async () => {
    const { s, schema, store } = await fresh()
    const [e, f, g] = [effect('u1', 1), effect('u2', 1), effect('u3', 1)]
    for (const x of [e, f, g]) await drive(store, x, 'DISPATCHED')
    await pgt.admin.query(`DELETE FROM ${s}.journals WHERE journal = 'u1'`)
    const before = await tables(s)
    // Three callers' single outcomes joined by group commit: one append() call.
    const outcomes = await Promise.allSettled([store.append([outcome(f)]), store.append([outcome(e)]), store.append([outcome(g)])])
    for (const o of outcomes) {
      expect(o.status).toBe('rejected')
      const told = String((o as PromiseRejectedResult).reason)
      expect(told).toContain(`effect ${e.id}'s journal has no head row`)
      expect(told).not.toMatch(/duplicate key|23505/)
    }
    expect(await tables(s)).toBe(before)
    expect(await journalViolations(pgt.admin, schema)).toEqual(['u1: records but no head'])
    // The journals not damaged go on.
    expect((await store.append([outcome(f), outcome(g)])).map((r) => r.ok)).toEqual([true, true])
    expect(await journalViolations(pgt.admin, schema)).toEqual(['u1: records but no head'])
    await store.close()
  })

  it("a batch naming the damaged journal's effect twice (append_each()) is refused, naming it, not with a duplicate key; nothing is written", async () => {
    const { s, schema, store } = await fresh()
    const [e, f] = [effect('w1', 1), effect('w2', 1)]
    for (const x of [e, f]) await drive(store, x, 'DISPATCHED')
    await pgt.admin.query(`DELETE FROM ${s}.journals WHERE journal = 'w1'`)
    const before = await tables(s)
    const told = await store.append([outcome(f), outcome(e), move(e, 'DISPATCHED', 'FAILED')]).then(
      () => 'written',
      (x: unknown) => String(x),
    )
    expect(told).toContain(`effect ${e.id}'s journal has no head row`)
    expect(told).not.toMatch(/duplicate key|23505/)
    expect(await tables(s)).toBe(before)
    expect(await journalViolations(pgt.admin, schema)).toEqual(['w1: records but no head'])
    await store.close()
  })

  it("a head row deleted by hand while an unchained batch waits for its lock: refused, naming the effect; no other journal's head is taken for it, nothing is written", async () => {
    const { s, schema, store } = await fresh()
    const [e, f] = [effect('v2', 1), effect('v3', 1)]
    for (const x of [e, f]) await drive(store, x, 'DISPATCHED')
    const before = await tables(s)
    const deleter = new pg.Client({ connectionString: pgt.db.url })
    await deleter.connect()
    await deleter.query('BEGIN')
    await deleter.query(`SELECT 1 FROM ${s}.journals WHERE journal = 'v2' FOR UPDATE`)
    // e's outcome would be written; f's (in the journal after e's) believes a state f has left, and loses.
    const pending = store.append([outcome(e), move(f, 'AUTHORIZED', 'DISPATCHED')]).then(
      () => 'written',
      (x: unknown) => String(x),
    )
    try {
      await waitingAppend('append')
      await deleter.query(`DELETE FROM ${s}.journals WHERE journal = 'v2'`)
    } finally {
      await deleter.query('COMMIT').finally(() => deleter.end())
    }
    expect(await pending).toContain(`effect ${e.id}'s journal has no head row`)
    expect(await journalViolations(pgt.admin, schema)).toEqual(['v2: records but no head'])
    // Records and effects as before; only the head deleted by hand is gone.
    const withoutHeads = (t: string) => ({ ...(JSON.parse(t) as Record<string, unknown>), heads: undefined })
    expect(withoutHeads(await tables(s))).toEqual(withoutHeads(before))
    await store.close()
  })

  it.each([
    ['one request (append_step())', 'append_step', (e: Effect): AppendRequest[] => [move(e, 'AUTHORIZED', 'DISPATCHED')]],
    ['one chain (append_chain())', 'append_chain', (e: Effect): AppendRequest[] => [move(e, 'AUTHORIZED', 'DISPATCHED'), chained(outcome(e))]],
  ] as const)('a head row deleted by hand while %s waits for its lock: refused, naming the effect; nothing is written', async (_, fn, requests) => {
    const { s, schema, store } = await fresh()
    const e = effect('x1', 1)
    await drive(store, e, 'AUTHORIZED')
    const before = await tables(s)
    const deleter = new pg.Client({ connectionString: pgt.db.url })
    await deleter.connect()
    await deleter.query('BEGIN')
    await deleter.query(`SELECT 1 FROM ${s}.journals WHERE journal = 'x1' FOR UPDATE`)
    const pending = store.append(requests(e)).then(
      () => 'written',
      (x: unknown) => String(x),
    )
    try {
      await waitingAppend(fn)
      await deleter.query(`DELETE FROM ${s}.journals WHERE journal = 'x1'`)
    } finally {
      await deleter.query('COMMIT').finally(() => deleter.end())
    }
    expect(await pending).toContain(`effect ${e.id}'s journal has no head row`)
    expect(await journalViolations(pgt.admin, schema)).toEqual(['x1: records but no head'])
    const withoutHeads = (t: string) => ({ ...(JSON.parse(t) as Record<string, unknown>), heads: undefined })
    expect(withoutHeads(await tables(s))).toEqual(withoutHeads(before))
    await store.close()
  })
})
