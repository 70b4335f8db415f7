/**
 * The postgres_row target when the wire or the server fails, on a real
 * PostgreSQL: the premise check and the INSERT are one atomic step (another
 * session cannot change a premise row in between); a backend terminated
 * mid-transaction, a closed port, a statement timeout, and a COMMIT whose
 * answer is lost (cut, or never sent back) are each classified by what can
 * have happened to the row.
 */
import net from 'node:net'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { toEffect, type Effect } from '../../../src/core/effect.js'
import { DispatchFault, TargetError } from '../../../src/core/errors.js'
import { PostgresRowTarget, type PostgresRowTargetSettings } from '../../../src/core/targets/postgres-row/index.js'
import type { ApplyContext } from '../../../src/core/targets/target.js'
import { ACCOUNT, createOrdersDb, HOLD_KEY, waitForRow, type OrdersDb } from '../../helpers/orders-db.js'
import { startPgCommitProxy, type PgCommitProxy } from '../../helpers/pg-commit-proxy.js'
import { sqliteGate, type SqliteGate } from '../../helpers/sqlite-gate.js'
import { dispatchFault } from '../../helpers/dispatch-fault.js'

const first: ApplyContext = { attempt: 1, recovering: false }
const ARGS = { order_id: 'o-1', account_id: ACCOUNT, amount: '12.50' }
const APP = 'interlock target orders'
let o: OrdersDb
let proxy: PgCommitProxy
const targets: PostgresRowTarget[] = []
const gates: SqliteGate[] = []

beforeAll(async () => {
  o = await createOrdersDb()
  proxy = await startPgCommitProxy(o.db.url)
})
afterAll(async () => {
  await proxy?.close()
  await o?.close()
})
beforeEach(async () => {
  await o.reset()
})
afterEach(async () => {
  await o.admin.query('SELECT pg_advisory_unlock_all()')
  for (const g of gates.splice(0)) await g.cleanup()
  for (const t of targets.splice(0)) await t.close()
})

function target(overrides: Partial<PostgresRowTargetSettings> = {}): PostgresRowTarget {
  const t = new PostgresRowTarget('orders', o.settings(overrides))
  targets.push(t)
  return t
}

async function captured(t: PostgresRowTarget): Promise<Effect> {
  return toEffect({ thread: 't1', target: 'orders', action: 'insert', args: ARGS, premises: await t.capture('insert', ARGS) })
}

async function fault(p: Promise<unknown>): Promise<DispatchFault> {
  const e = await dispatchFault(p)
  const f = e as DispatchFault
  expect(`${f.message} ${f.hint ?? ''} ${JSON.stringify(f.toJSON())}`).not.toContain('interlock-test')
  return f
}

/** The apply's backend, stopped by the orders trigger on the advisory lock the test holds. */
function heldApply(): Promise<Record<string, unknown>> {
  return waitForRow(
    o.admin,
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
    [APP],
  )
}

describe('postgres_row: check and effect are one atomic step', () => {
  it('a concurrent change to a premise row waits until the apply has committed its row', async () => {
    const t = target()
    const e = await captured(t)
    await o.admin.query('SELECT pg_advisory_lock($1)', [HOLD_KEY])
    const applying = t.apply(e, first)
    const { pid: applyPid } = await heldApply() // premise locked and compared; the INSERT is waiting

    const other = await o.connect()
    const changing = other.query('UPDATE accounts SET balance = 0 WHERE id = $1', [ACCOUNT])
    const { pid: updatePid } = await waitForRow(
      o.admin,
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'UPDATE accounts%' AND wait_event_type = 'Lock'",
    )
    // The change is blocked by the apply's own transaction, between its check and its row.
    expect((await o.admin.query('SELECT pg_blocking_pids($1) AS pids', [updatePid])).rows[0].pids).toEqual([applyPid])
    expect((await o.admin.query('SELECT balance FROM accounts WHERE id = $1', [ACCOUNT])).rows[0].balance).toBe('100.00')
    await o.admin.query('SELECT pg_advisory_unlock($1)', [HOLD_KEY])

    expect(await applying).toEqual({ table: 'public.orders', effect_id: e.id, inserted: true })
    await changing
    expect(await o.orderCount(e.id)).toBe(1)
    expect((await o.admin.query('SELECT balance FROM accounts WHERE id = $1', [ACCOUNT])).rows[0].balance).toBe('0.00')
  })

  it('an apply that waited for a concurrent change sees the changed row and rejects: 0 rows', async () => {
    const t = target()
    const e = await captured(t)
    const other = await o.connect()
    await other.query('BEGIN')
    await other.query('UPDATE accounts SET balance = 1 WHERE id = $1', [ACCOUNT])
    const applying = fault(t.apply(e, first))
    await waitForRow(o.admin, "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [APP])
    await other.query('COMMIT')
    const f = await applying
    expect(f.kind).toBe('premise')
    expect(f.message).toContain('row 1 balance: was "100.00", now "1.00"')
    expect(await o.orderCount()).toBe(0)
  })
})

describe('postgres_row: faults on the wire', () => {
  it('a backend terminated mid-transaction (before COMMIT) is not-sent: PostgreSQL rolled it back; the retry inserts once', async () => {
    const t = target()
    const e = await captured(t)
    await o.admin.query('SELECT pg_advisory_lock($1)', [HOLD_KEY])
    const applying = fault(t.apply(e, first))
    const { pid } = await heldApply()
    await o.admin.query('SELECT pg_terminate_backend($1)', [pid])
    const f = await applying
    expect(f.kind).toBe('not-sent')
    expect(f.message).toMatch(/connection broke before COMMIT/)
    expect(f.message).toContain('57P01')
    await o.admin.query('SELECT pg_advisory_unlock($1)', [HOLD_KEY])
    expect(await o.orderCount()).toBe(0)
    expect(await t.apply(e, { attempt: 2, recovering: false })).toMatchObject({ inserted: true })
    expect(await o.orderCount()).toBe(1)
  })

  it('a closed port is not-sent, without the password in the message; reads say they cannot tell', async () => {
    const closed = await closedPort()
    const url = new URL(o.db.url)
    url.port = String(closed)
    const t = target({ url: url.toString(), connectTimeoutMs: 500 })
    const f = await fault(t.apply(toEffect({ thread: 't1', target: 'orders', action: 'insert', args: ARGS }), first))
    expect(f.kind).toBe('not-sent')
    expect(f.message).toMatch(/could not connect; nothing was sent.*ECONNREFUSED/)
    expect(f.message).toContain(`on 127.0.0.1:${closed}`)
    const read = await t.query(toEffect({ thread: 't1', target: 'orders', action: 'insert', args: ARGS })).then(
      () => null,
      (e: unknown) => e,
    )
    expect(read).toBeInstanceOf(TargetError)
    expect((read as Error).message).toMatch(/cannot ask whether the effect happened/)
  })

  it('a statement timeout while the premise row is locked elsewhere is retry-later: rolled back, nothing written', async () => {
    const t = target({ statementTimeoutMs: 300, timeoutMs: 3000 })
    const e = await captured(t)
    const other = await o.connect()
    await other.query('BEGIN')
    await other.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [ACCOUNT])
    try {
      const f = await fault(t.apply(e, first))
      expect(f.kind).toBe('retry-later')
      expect(f.message).toMatch(/canceling statement due to statement timeout.*57014/)
    } finally {
      await other.query('ROLLBACK')
    }
    expect(await o.orderCount()).toBe(0)
  })

  it('a COMMIT whose answer is cut off is unknown; the row is there and query finds it', async () => {
    const t = target({ url: proxy.url })
    const e = await captured(t)
    const committed = proxy.loseNextCommit('cut')
    const f = await fault(t.apply(e, first))
    expect(f.kind).toBe('unknown')
    expect(f.message).toMatch(/COMMIT was sent but its answer was lost/)
    await committed
    expect(await o.orderCount(e.id)).toBe(1)
    expect(await t.query(e)).toMatchObject({ effect_id: e.id, found: true })
  })

  it('a COMMIT never answered ends at the client-side timeout as unknown', async () => {
    const t = target({ url: proxy.url, statementTimeoutMs: 200, timeoutMs: 600 })
    const e = await captured(t)
    const committed = proxy.loseNextCommit('silence')
    const started = Date.now()
    const f = await fault(t.apply(e, first))
    expect(f.kind).toBe('unknown')
    expect(f.message).toMatch(/Query read timeout/)
    expect(Date.now() - started).toBeLessThan(5000)
    await committed
    expect(await o.orderCount(e.id)).toBe(1)
  })

  // The next try asks first (tier 2); whether the server's commit is visible by then or the re-apply finds
  // the row in ON CONFLICT, the effect is COMMITTED with one row.
  it('through the gate, a lost COMMIT answer is settled without a second row', async () => {
    const g = await sqliteGate(() => [target({ url: proxy.url })])
    gates.push(g)
    const premises = await g.gate.capture('orders', 'insert', ARGS)
    const lostBefore = proxy.lost
    void proxy.loseNextCommit('cut')
    const out = await g.gate.submit({ thread: 't1', target: 'orders', action: 'insert', args: ARGS, premises })
    expect(proxy.lost).toBe(lostBefore + 1)
    expect(out).toMatchObject({ status: 'committed' })
    if (out.status === 'committed' && out.via === 'apply') expect(out.receipt).toMatchObject({ inserted: false })
    expect(await o.orderCount()).toBe(1)
  })
})

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const srv = net.createServer()
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  const port = (srv.address() as net.AddressInfo).port
  await new Promise<void>((r) => srv.close(() => r()))
  return port
}
