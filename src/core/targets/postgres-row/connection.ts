/**
 * The target's connection pool. `pg` is imported on first use, so a process
 * with no postgres_row target never loads it (as stores/open.ts does for the
 * store).
 *
 * Every statement runs under two limits: PostgreSQL's statement_timeout (a
 * definite, rolled-back error) and, above it, pg's client-side query_timeout
 * for a server that stopped answering at all. idle_in_transaction_session_timeout
 * frees row locks held by a client that vanished mid-transaction.
 *
 * The session's TimeZone, DateStyle and IntervalStyle are pinned so premise
 * rows read the same text in every process (premise-rows.ts).
 */
import type pg from 'pg'
import type { RowPlan } from './settings.js'

const SESSION = '-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=1'

/** Enough for one relay's concurrent dispatches; a target is one table, not a workload. */
const MAX_CONNECTIONS = 4

export async function createRowPool(name: string, url: string, plan: RowPlan): Promise<pg.Pool> {
  const { default: pgModule } = await import('pg')
  const pool = new pgModule.Pool({
    connectionString: url,
    max: MAX_CONNECTIONS,
    connectionTimeoutMillis: plan.connectTimeoutMs,
    statement_timeout: plan.statementTimeoutMs,
    query_timeout: plan.timeoutMs,
    idle_in_transaction_session_timeout: plan.timeoutMs,
    keepAlive: true,
    options: SESSION,
    application_name: `interlock target ${name}`.slice(0, 63),
  })
  // An idle connection that drops emits here; without a listener Node would
  // crash the process. The pool discards it and the next call reconnects.
  pool.on('error', () => {})
  // A connection lost while checked out emits 'error' on its client as well as
  // failing the statement in flight; the statement's error is the one we act on.
  pool.on('connect', (client) => client.on('error', () => {}))
  return pool
}

/** "target orders: table shop.orders in database app on db.example:5432", without credentials. */
export function describeTarget(name: string, url: string, table: string): string {
  try {
    const u = new URL(url)
    const db = decodeURIComponent(u.pathname.replace(/^\//, '')) || '(default database)'
    return `target ${name}: table ${table} in database ${db} on ${u.hostname || 'localhost'}${u.port ? `:${u.port}` : ''}`
  } catch {
    return `target ${name}: table ${table}`
  }
}

/** The URL and its password, decoded and not, to scrub from anything a driver error might echo. */
export function urlSecrets(url: string): string[] {
  const out = [url]
  try {
    const u = new URL(url)
    if (u.password) out.push(u.password, decodeURIComponent(u.password))
  } catch {}
  return out.filter((s) => s.length >= 4)
}
