/**
 * A PostgreSQL database of its own (helpers/pg.ts) with the tables the
 * postgres_row target tests write to:
 * - accounts: what premises read (status, balance);
 * - orders: the target's table, effect_id UNIQUE, amount > 0;
 * - loose: a table whose effect_id has no unique constraint.
 * orders has a BEFORE INSERT trigger that takes advisory lock HOLD_KEY
 * shared: free unless a test holds it, so a test can stop an apply inside its
 * transaction (after the premise is locked, before the row is written).
 */
import pg from 'pg'
import type { PostgresRowTargetSettings } from '../../src/core/targets/postgres-row/index.js'
import { createTestDatabase, type TestDatabase } from './pg.js'

export const HOLD_KEY = 4242
export const ACCOUNT = 'acc-1'

export interface OrdersDb {
  db: TestDatabase
  /** A connection of the test's own (the "other session"). */
  admin: pg.Client
  reset(): Promise<void>
  orderCount(effectId?: string): Promise<number>
  setBalance(balance: string): Promise<void>
  /** Target settings for `orders`, with short timeouts. */
  settings(overrides?: Partial<PostgresRowTargetSettings>): PostgresRowTargetSettings
  /** Another connection, closed by close(). */
  connect(): Promise<pg.Client>
  close(): Promise<void>
}

export async function createOrdersDb(): Promise<OrdersDb> {
  const db = await createTestDatabase()
  const clients: pg.Client[] = []
  const connect = async () => {
    const c = new pg.Client({ connectionString: db.url })
    c.on('error', () => {})
    await c.connect()
    clients.push(c)
    return c
  }
  const admin = await connect()
  await admin.query(`
    CREATE TABLE accounts (id text PRIMARY KEY, status text NOT NULL, balance numeric(12,2) NOT NULL);
    CREATE TABLE orders (
      id bigserial PRIMARY KEY,
      effect_id text NOT NULL UNIQUE,
      order_id text NOT NULL,
      account_id text NOT NULL,
      amount numeric(12,2) NOT NULL CHECK (amount > 0),
      note jsonb
    );
    CREATE TABLE loose (effect_id text, order_id text);
    CREATE FUNCTION hold_on() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock_shared(${HOLD_KEY}); RETURN NEW; END $$;
    CREATE TRIGGER orders_hold BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION hold_on();
  `)
  return {
    db,
    admin,
    connect,
    reset: async () => {
      await admin.query(`TRUNCATE orders, loose; DELETE FROM accounts;
        INSERT INTO accounts VALUES ('${ACCOUNT}', 'open', 100)`)
    },
    orderCount: async (effectId) => {
      const res = effectId
        ? await admin.query('SELECT count(*)::int AS n FROM orders WHERE effect_id = $1', [effectId])
        : await admin.query('SELECT count(*)::int AS n FROM orders')
      return res.rows[0].n as number
    },
    setBalance: async (balance) => {
      await admin.query('UPDATE accounts SET balance = $1 WHERE id = $2', [balance, ACCOUNT])
    },
    settings: (overrides = {}) => ({
      url: db.url,
      table: 'public.orders',
      columns: { order_id: 'order_id', account_id: 'account_id', amount: 'amount' },
      premiseSql: 'SELECT status, balance FROM accounts WHERE id = $1',
      premiseParams: ['account_id'],
      compensateSql: 'DELETE FROM orders WHERE effect_id = $1',
      compensateParams: ['effect_id'],
      statementTimeoutMs: 3000,
      timeoutMs: 6000,
      connectTimeoutMs: 2000,
      ...overrides,
    }),
    close: async () => {
      for (const c of clients.splice(0)) await c.end().catch(() => {})
      await db.drop()
    },
  }
}

/** Polls until `sql` returns a row (e.g. a backend waiting on a lock), or fails after `ms`. */
export async function waitForRow(client: pg.Client, sql: string, params: unknown[] = [], ms = 10_000): Promise<Record<string, unknown>> {
  const until = Date.now() + ms
  for (;;) {
    const res = await client.query(sql, params)
    if (res.rows[0]) return res.rows[0]
    if (Date.now() > until) throw new Error(`no row after ${ms} ms: ${sql}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}
