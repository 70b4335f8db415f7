/**
 * Connections from `[store] url`. The URL usually carries a password, so it
 * never appears in a message: places are named by host, database and schema.
 */
import pg from 'pg'
import { pgError } from './errors.js'
import { sessionLimitsSql, type PgSessionLimits } from './session-limits.js'

export interface PgConnectOptions {
  maxConnections?: number
  connectTimeoutMs?: number
  /** Set on every pooled connection as it opens (session-limits.ts). */
  limits?: PgSessionLimits
}

/** "PostgreSQL schema "interlock" in database app on db.example:5432", without credentials. */
export function describePostgres(url: string, schema: string): string {
  try {
    const u = new URL(url)
    const db = decodeURIComponent(u.pathname.replace(/^\//, '')) || '(default database)'
    return `PostgreSQL schema "${schema}" in database ${db} on ${u.hostname || 'localhost'}${u.port ? `:${u.port}` : ''}`
  } catch {
    return `PostgreSQL schema "${schema}"`
  }
}

export function createPool(url: string, options: PgConnectOptions = {}): pg.Pool {
  const limits = sessionLimitsSql(options.limits)
  const config: pg.PoolConfig & { onConnect?: (client: pg.PoolClient) => Promise<unknown> } = {
    connectionString: url,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: 'interlock',
  }
  // pg-pool awaits onConnect before it hands a new connection out (and ends it, failing the
  // checkout, when it rejects): no statement of the caller's ever runs without the limits.
  // (@types/pg does not declare the hook yet.)
  if (limits) config.onConnect = (client) => client.query(limits)
  const pool = new pg.Pool(config)
  // An idle connection that drops emits here; without a listener Node would
  // crash the process. The pool discards it and the next query reconnects.
  pool.on('error', () => {})
  // A checked-out client has no listener of the pool's: a server that goes away
  // mid-query (restart, `pg_ctl stop -m immediate`) would emit 'error' on it and
  // crash the process. The query's own promise already rejects with the cause,
  // which the store turns into StoreUnavailableError; the event adds nothing.
  pool.on('connect', (client) => client.on('error', () => {}))
  return pool
}

/** A single client for one-off work (install), connected or StoreUnavailableError. */
export async function connectClient(url: string, where: string, options: PgConnectOptions = {}): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: 'interlock install',
  })
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (e) {
    await client.end().catch(() => {})
    throw pgError(e, 'connecting', where)
  }
  return client
}
