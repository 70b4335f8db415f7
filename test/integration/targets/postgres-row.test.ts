/**
 * The postgres_row target on a real PostgreSQL (a database of its own), with
 * a real Gate on a real SQLite journal: the happy path, premises (stale at
 * validation, and changed between validation and apply), recovery of an
 * effect left DISPATCHED, repeated applies, bad input, compensation, and the
 * first-use check of the table. Faults on the wire: postgres-row-faults.test.ts.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { JsonObject } from '../../../src/core/canonical-json.js'
import { toEffect, type Effect } from '../../../src/core/effect.js'
import { ConfigError, DispatchFault, InputError, TargetError } from '../../../src/core/errors.js'
import { PostgresRowTarget, type PostgresRowTargetSettings } from '../../../src/core/targets/postgres-row/index.js'
import type { ApplyContext } from '../../../src/core/targets/target.js'
import { ACCOUNT, createOrdersDb, type OrdersDb } from '../../helpers/orders-db.js'
import { journalDispatched, journalText, sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'
import { thenMeanwhile } from '../../helpers/meanwhile.js'

const first: ApplyContext = { attempt: 1, recovering: false }
const ARGS = { order_id: 'o-1', account_id: ACCOUNT, amount: '12.50' }
let o: OrdersDb
const targets: PostgresRowTarget[] = []
const gates: SqliteGate[] = []

beforeAll(async () => {
  o = await createOrdersDb()
})
afterAll(async () => {
  await o?.close()
})
beforeEach(async () => {
  await o.reset()
})
afterEach(async () => {
  for (const g of gates.splice(0)) await g.cleanup()
  for (const t of targets.splice(0)) await t.close()
})

function target(overrides: Partial<PostgresRowTargetSettings> = {}, name = 'orders'): PostgresRowTarget {
  const t = new PostgresRowTarget(name, o.settings(overrides))
  targets.push(t)
  return t
}

async function gateWith(make: () => PostgresRowTarget[], retry = {}): Promise<SqliteGate> {
  const g = await sqliteGate(make, { retry })
  gates.push(g)
  return g
}

async function effectWithPremises(t: PostgresRowTarget, args: JsonObject = ARGS, thread = 't1'): Promise<Effect> {
  return toEffect({ thread, target: t.name, action: 'insert', args, premises: await t.capture('insert', args) })
}

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  const f = e as DispatchFault
  // The password is in the URL; it never reaches a message.
  expect(`${f.message} ${f.hint ?? ''} ${JSON.stringify(f.toJSON())}`).not.toContain('interlock-test')
  return f
}

describe('postgres_row through a real gate', () => {
  it('captures the premise rows as stable JSON, then inserts one row in one transaction and commits the effect', async () => {
    const g = await gateWith(() => [target()])
    const premises = await g.gate.capture('orders', 'insert', ARGS)
    expect(premises).toEqual({ rows: [{ status: 'open', balance: '100.00' }] })

    const out = await g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: ARGS, premises })
    expect(out).toMatchObject({ status: 'committed', via: 'apply' })
    if (out.status !== 'committed') throw new Error('unreachable')
    expect(out.receipt).toEqual({ table: 'public.orders', effect_id: out.effectId, inserted: true })
    const row = await o.admin.query('SELECT order_id, account_id, amount FROM orders WHERE effect_id = $1', [out.effectId])
    expect(row.rows).toEqual([{ order_id: 'o-1', account_id: ACCOUNT, amount: '12.50' }])

    // The same decision again is the same effect: answered from the journal, nothing inserted.
    expect(await g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: ARGS, premises })).toEqual({
      ...out,
      via: 'journal',
      committedBy: 'apply',
    })
    expect(await o.orderCount()).toBe(1)
    // Neither the URL nor its password reaches the journal.
    const journal = await journalText(g.store)
    expect(journal).not.toContain('interlock-test')
    expect(journal).not.toContain(o.db.url)
  })

  it('rejects an effect whose premise changed before validation, naming the value; nothing is inserted', async () => {
    const g = await gateWith(() => [target()])
    const premises = await g.gate.capture('orders', 'insert', ARGS)
    await o.setBalance('5')
    const out = await g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: ARGS, premises })
    expect(out).toEqual({ status: 'rejected', effectId: expect.any(String), violations: ['row 1 balance: was "100.00", now "5.00"'] })
    expect(await o.orderCount()).toBe(0)
  })

  it('rejects through the FOR UPDATE re-check when the premise changes after validation and before apply', async () => {
    const g = await gateWith(() => {
      const t = target()
      // Another session changes the account right after the gate's check passed.
      thenMeanwhile(t, () => o.admin.query("UPDATE accounts SET status = 'frozen' WHERE id = $1", [ACCOUNT]))
      return [t]
    })
    const premises = await g.gate.capture('orders', 'insert', ARGS)
    const out = await g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: ARGS, premises })
    expect(out.status).toBe('rejected')
    if (out.status !== 'rejected') throw new Error('unreachable')
    expect(out.violations).toHaveLength(1)
    expect(out.violations[0]).toContain('premises changed since the decision: row 1 status: was "open", now "frozen"')
    expect(await o.orderCount()).toBe(0)
  })

  it('names added and missing rows when the premise query returns a different number of rows', async () => {
    const t = target()
    const e = await effectWithPremises(t)
    await o.admin.query('DELETE FROM accounts')
    expect(await t.validatePremises(e)).toEqual(['premise_sql now returns 0 row(s); it returned 1 when the agent decided'])
    expect((await fault(t.apply(e, first))).kind).toBe('premise')
    expect(await o.orderCount()).toBe(0)
  })

  it('an effect without captured premises is inserted without a premise check', async () => {
    const t = target()
    const e = toEffect({ thread: 't1', target: 'orders', action: 'insert', args: ARGS })
    await o.setBalance('0')
    expect(await t.validatePremises(e)).toEqual([])
    expect(await t.apply(e, first)).toMatchObject({ inserted: true })
  })
})

describe('postgres_row recovery (tier 2)', () => {
  it('an effect left DISPATCHED whose row was inserted is found by query: COMMITTED, exactly one row', async () => {
    const g = await gateWith(() => [target()])
    const t = g.gate.target('orders') as PostgresRowTarget
    const e = await effectWithPremises(t)
    await journalDispatched(g.store, e, 2)
    await t.apply(e, first) // the crashed process's apply landed; COMMITTED was never written
    const next = await g.restart()
    const report = await next.gate.recover()
    expect(report.effects).toMatchObject([{ effectId: e.id, found: 'DISPATCHED', action: 'found-by-query' }])
    expect(report.effects[0]!.outcome).toMatchObject({ status: 'committed', via: 'query', receipt: { table: 'public.orders', effect_id: e.id, found: true } })
    expect(await o.orderCount(e.id)).toBe(1)
    expect(await o.orderCount()).toBe(1)
  })

  it('an effect left DISPATCHED with no row is applied by recovery: exactly one row', async () => {
    const g = await gateWith(() => [target()])
    const e = await effectWithPremises(g.gate.target('orders') as PostgresRowTarget)
    await journalDispatched(g.store, e, 2)
    const next = await g.restart()
    const report = await next.gate.recover()
    expect(report.effects).toMatchObject([{ effectId: e.id, action: 'applied-after-query' }])
    expect(report.effects[0]!.outcome).toMatchObject({ status: 'committed', via: 'apply', receipt: { inserted: true } })
    expect(await o.orderCount(e.id)).toBe(1)
    // A second recovery finds nothing in flight.
    expect((await next.gate.recover()).effects).toEqual([])
    expect(await o.orderCount()).toBe(1)
  })

  it('a relay whose lease ran out by COMMIT rolls back: a fenced fault, no row', async () => {
    const t = target()
    const e = await effectWithPremises(t)
    let checks = 0
    const f = await fault(t.apply(e, { ...first, fence: () => (checks++, false) }))
    expect(f.kind).toBe('fenced')
    expect(checks).toBe(1)
    expect(await o.orderCount(e.id)).toBe(0)
    expect(await t.query(e)).toBeNull()
    expect(await t.apply(e, { ...first, fence: () => true })).toMatchObject({ inserted: true })
    expect(await o.orderCount(e.id)).toBe(1)
  })

  it('a repeated apply inserts nothing (ON CONFLICT), also after the premise moved on', async () => {
    const t = target()
    const e = await effectWithPremises(t)
    expect(await t.apply(e, first)).toEqual({ table: 'public.orders', effect_id: e.id, inserted: true })
    expect(await t.apply(e, { attempt: 2, recovering: true })).toEqual({ table: 'public.orders', effect_id: e.id, inserted: false })
    await o.setBalance('0')
    // The effect already landed: a changed premise is no reason to refuse a repeat that changes nothing.
    expect(await t.apply(e, { attempt: 3, recovering: true })).toMatchObject({ inserted: false })
    expect(await o.orderCount()).toBe(1)
    expect(await t.query(e)).toEqual({ table: 'public.orders', effect_id: e.id, found: true })
    expect(await t.query(toEffect({ thread: 't1', target: 'orders', action: 'insert', args: { ...ARGS, order_id: 'o-2' } }))).toBeNull()
  })
})

describe('postgres_row input', () => {
  it('refuses a missing mapped arg and an unknown arg with an InputError naming it; nothing is journaled or sent', async () => {
    const g = await gateWith(() => [target()])
    const { amount: _, ...missing } = ARGS
    await expect(g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: missing })).rejects.toThrow(
      expect.objectContaining({ name: 'InputError', message: expect.stringContaining('args.amount is missing') }),
    )
    await expect(g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: { ...ARGS, colour: 'red' } })).rejects.toThrow(
      /args\.colour is not used by target orders/,
    )
    await expect(g.gate.submit({ thread: 't1', target: 'orders', action: 'upsert', args: ARGS })).rejects.toThrow(/unknown action "upsert"/)
    expect(await journalText(g.store)).toBe('')
    expect(await o.orderCount()).toBe(0)
  })

  it('capture refuses bad args before reading; apply of a journaled bad effect is refused without sending', async () => {
    const t = target()
    await expect(t.capture('insert', { order_id: 'o-1', amount: '1' })).rejects.toThrow(InputError)
    const bad = toEffect({ thread: 't1', target: 'orders', action: 'insert', args: { order_id: 'o-1', amount: '1' } })
    expect(await t.validatePremises(bad)).toEqual([expect.stringContaining('args.account_id is missing')])
    const f = await fault(t.apply(bad, first))
    expect(f.kind).toBe('refused')
    expect(f.cause).toBeInstanceOf(InputError)
    expect(await o.orderCount()).toBe(0)
  })

  it('a constraint the row breaks is a definite refusal with PostgreSQL\'s message: FAILED, nothing inserted', async () => {
    const g = await gateWith(() => [target()])
    const args = { ...ARGS, amount: '-3' }
    const out = await g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args, premises: await g.gate.capture('orders', 'insert', args) })
    expect(out.status).toBe('failed')
    if (out.status !== 'failed') throw new Error('unreachable')
    expect(out.reason).toMatch(/violates check constraint "orders_amount_check".*SQLSTATE 23514/)
    expect(await o.orderCount()).toBe(0)
  })

  it('a value that does not fit its column is refused (22xxx), with the column type\'s own words', async () => {
    const t = target()
    const e = toEffect({ thread: 't1', target: 'orders', action: 'insert', args: { ...ARGS, amount: 'twelve' } })
    const f = await fault(t.apply(e, first))
    expect(f.kind).toBe('refused')
    expect(f.message).toMatch(/invalid input syntax for type numeric: "twelve".*SQLSTATE 22P02/)
  })

  it('reads premises of several types as stable JSON: numerics and int8 as strings, timestamps in UTC ISO form', async () => {
    const t = target({
      premiseSql: `SELECT id, balance, 9007199254740993::int8 AS big, 7::int4 AS small, true AS flag,
                          '{"b":1,"a":[2]}'::jsonb AS doc, '2030-01-02 03:04:05.123456+02'::timestamptz AS at, NULL::text AS nothing
                     FROM accounts WHERE id = $1`,
    })
    expect(await t.capture('insert', ARGS)).toEqual({
      rows: [{ id: ACCOUNT, balance: '100.00', big: '9007199254740993', small: 7, flag: true, doc: { a: [2], b: 1 }, at: '2030-01-02 01:04:05.123456+00', nothing: null }],
    })
  })
})

describe('postgres_row compensation', () => {
  it('runs compensate_sql as a linked effect through the same gate; running it again changes nothing', async () => {
    const g = await gateWith(() => [target()])
    const t = g.gate.target('orders') as PostgresRowTarget
    const out = await g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: ARGS, premises: await t.capture('insert', ARGS) })
    if (out.status !== 'committed') throw new Error(`expected committed, got ${out.status}`)
    const original = toEffect({ thread: 't1', target: 'orders', action: 'insert', args: ARGS })
    const comp = await t.compensation!(original, out.receipt)
    expect(comp).toEqual({ action: 'compensate', args: { effect_id: out.effectId } })

    const undone = await g.gate.submit({ thread: 't1', target: 'orders', ...comp })
    expect(undone).toMatchObject({ status: 'committed', receipt: { table: 'public.orders', rows_affected: 1 } })
    expect(await o.orderCount()).toBe(0)
    // Recovery may run a compensation again (query cannot see it): the statement must be idempotent, as this DELETE is.
    const again = toEffect({ thread: 't1', target: 'orders', ...comp })
    expect(await t.query(again)).toBeNull()
    expect(await t.apply(again, { attempt: 2, recovering: true })).toMatchObject({ rows_affected: 0 })
  })

  it('takes compensate params from the compensated effect\'s args', async () => {
    const t = target({ compensateSql: 'DELETE FROM orders WHERE order_id = $1 AND account_id = $2', compensateParams: ['order_id', 'account_id'] })
    const e = await effectWithPremises(t)
    const receipt = await t.apply(e, first)
    const comp = await t.compensation!(e, receipt)
    expect(comp.args).toEqual({ order_id: 'o-1', account_id: ACCOUNT })
    expect(await t.apply(toEffect({ thread: 't1', target: 'orders', ...comp }), first)).toMatchObject({ rows_affected: 1 })
    expect(await o.orderCount()).toBe(0)
  })

  it('without compensate_sql the target says why it cannot be compensated', () => {
    const t = target({ compensateSql: undefined, compensateParams: [] })
    expect(t.compensation).toBeUndefined()
    expect(t.notCompensable).toMatch(/no compensate_sql/)
    expect(() => t.validateArgs('compensate', { effect_id: 'x' })).toThrow(/no compensate_sql is configured/)
  })
})

describe('postgres_row first-use check of the table', () => {
  it('refuses a table whose effect id column has no unique constraint, before DISPATCHED; passes once it has one', async () => {
    const g = await gateWith(() => [target({ table: 'loose', columns: { order_id: 'order_id' }, premiseSql: undefined, premiseParams: [], compensateSql: undefined, compensateParams: [] })])
    const submit = () => g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: { order_id: 'o-1' } })
    const err = await submit().then(
      () => null,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(TargetError)
    expect((err as TargetError).message).toMatch(/table loose has no unique constraint on effect_id alone; INSERT \.\.\. ON CONFLICT \(effect_id\) needs one/)
    expect((err as TargetError).hint).toContain('ALTER TABLE "loose" ADD UNIQUE ("effect_id")')
    // Refused by the premise check, before the effect's first commit: nothing journaled, nothing sent.
    expect(await journalText(g.store)).not.toContain('"PROPOSED"')
    expect((await o.admin.query('SELECT count(*)::int AS n FROM loose')).rows[0].n).toBe(0)

    // Applied directly, the same check refuses definitely: nothing was sent.
    const t = g.gate.target('orders') as PostgresRowTarget
    const f = await fault(t.apply(toEffect({ thread: 't1', target: 'orders', action: 'insert', args: { order_id: 'o-1' } }), first))
    expect(f.kind).toBe('refused')
    expect(f.message).toContain('no unique constraint on effect_id')

    // A failed check is not remembered: fix the table and the same submit goes through.
    await o.admin.query('ALTER TABLE loose ADD UNIQUE (effect_id)')
    try {
      expect((await g.gate.recover()).inFlight).toBe(0)
      expect(await submit()).toMatchObject({ status: 'committed' })
      expect((await o.admin.query('SELECT count(*)::int AS n FROM loose')).rows[0].n).toBe(1)
    } finally {
      await o.admin.query('ALTER TABLE loose DROP CONSTRAINT loose_effect_id_key')
    }
  })

  it('names a missing table, missing columns, and a premise query that cannot be locked or that writes', async () => {
    await expect(target({ table: 'nowhere' }).validatePremises(toEffect({ thread: 't', target: 'orders', action: 'insert', args: ARGS }))).rejects.toThrow(
      /table nowhere does not exist/,
    )
    await expect(target({ columns: { order_id: 'order_id', account_id: 'account_id', amount: 'amount', colour: 'colour' } }).capture('insert', { ...ARGS, colour: 'red' })).rejects.toThrow(
      /table public\.orders has no column colour/,
    )
    await expect(target({ premiseSql: 'SELECT count(*) FROM accounts WHERE id = $1' }).capture('insert', ARGS)).rejects.toThrow(
      /premise_sql cannot be used: FOR UPDATE is not allowed with aggregate functions/,
    )
    await expect(
      target({ premiseSql: 'WITH gone AS (DELETE FROM accounts WHERE id = $1 RETURNING status) SELECT status FROM gone' }).capture('insert', ARGS),
    ).rejects.toThrow(/premise_sql writes; it must only read/)
    expect((await o.admin.query('SELECT count(*)::int AS n FROM accounts')).rows[0].n).toBe(1)
    await expect(target({ compensateSql: 'DELETE FROM nowhere WHERE effect_id = $1' }).capture('insert', ARGS)).rejects.toThrow(
      /compensate_sql cannot be used: relation "nowhere" does not exist/,
    )
  })

  it('refuses a user without INSERT on the table, naming the privilege', async () => {
    await o.admin.query(`DO $$ BEGIN CREATE ROLE row_reader LOGIN PASSWORD 'reader-pass'; EXCEPTION WHEN duplicate_object THEN NULL; END $$`)
    await o.admin.query('GRANT SELECT ON orders, accounts TO row_reader')
    const url = new URL(o.db.url)
    url.username = 'row_reader'
    url.password = 'reader-pass'
    const t = target({ url: url.toString() })
    const err = await t.capture('insert', ARGS).then(
      () => null,
      (e: unknown) => e as TargetError,
    )
    expect(err?.message).toMatch(/lacks INSERT on public\.orders/)
    expect(err?.message).not.toContain('reader-pass')
  })
})

describe('postgres_row settings', () => {
  it('refuses bad identifiers, placeholder mismatches and timeouts in the wrong order, all at once, naming keys', () => {
    const err = (() => {
      try {
        new PostgresRowTarget('orders', {
          ...o.settings(),
          table: 'Orders; DROP TABLE x',
          effectIdColumn: 'effect id',
          columns: { amount: 'amount', total: 'amount', effect_id: 'x' },
          premiseSql: 'SELECT balance FROM accounts WHERE id = $1 AND status = $2 FOR UPDATE',
          compensateParams: ['effect_id', 'nope'],
          statementTimeoutMs: 5000,
          timeoutMs: 5000,
        })
      } catch (e) {
        return e as ConfigError
      }
      throw new Error('expected a ConfigError')
    })()
    expect(err).toBeInstanceOf(ConfigError)
    expect(err.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^targets\.orders\.table: must be a lower-case table name/),
        expect.stringMatching(/^targets\.orders\.effect_id_column:/),
        expect.stringMatching(/^targets\.orders\.columns\.total: column amount is already mapped from amount/),
        expect.stringMatching(/^targets\.orders\.columns\.effect_id: "effect_id" is the effect's own id/),
        expect.stringMatching(/^targets\.orders\.premise_sql: write no locking clause/),
        expect.stringMatching(/^targets\.orders\.premise_params: premise_sql uses \$1\.\.\$2 but 1 name\(s\) are given/),
        expect.stringMatching(/^targets\.orders\.compensate_params: "nope" is neither/),
        expect.stringMatching(/^targets\.orders\.timeout_ms: must be above statement_timeout_ms/),
      ]),
    )
    expect(JSON.stringify(err.toJSON()) + err.problems.join()).not.toContain('interlock-test')
  })
})
