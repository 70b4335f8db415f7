/**
 * Connections from `[store] url`. The URL usually carries a password, so it
 * never appears in a message: places are named by host, database and schema.
 * A URL naming several hosts, or asking for a kind of session
 * (target_session_attrs), connects through hosts.ts: each new connection
 * picks its host then, so a pool follows a failover.
 */
import pg from 'pg'
import { pgError } from './errors.js'
import { HostChoice, hostLabel, parsePgUrl, selectingClient } from './hosts.js'
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
    const target = parsePgUrl(url)
    const u = new URL(target.urlFor(target.hosts[0]!))
    const db = decodeURIComponent(u.pathname.replace(/^\//, '')) || '(default database)'
    const hosts = target.hosts.length === 1 ? `${u.hostname || 'localhost'}${u.port ? `:${u.port}` : ''}` : target.hosts.map(hostLabel).join(', ')
    const attrs = target.attrs === 'any' ? '' : ` (${target.attrs})`
    return `PostgreSQL schema "${schema}" in database ${db} on ${hosts}${attrs}`
  } catch {
    return `PostgreSQL schema "${schema}"`
  }
}

/**
 * The pg config for `url`: a plain connection string for one host and any
 * session, else a client class that picks the host on each connect.
 */
function clientSetup(url: string, base: pg.ClientConfig): { config: pg.ClientConfig; Client: typeof pg.Client } {
  const target = parsePgUrl(url)
  if (target.hosts.length === 1 && target.attrs === 'any') return { config: { ...base, connectionString: target.urlFor(target.hosts[0]!) }, Client: pg.Client }
  return { config: base, Client: selectingClient(new HostChoice(target), base) }
}

/** A client (not connected) for `url`, one host or several (the LISTEN connection's). */
export function newClient(url: string, base: pg.ClientConfig): pg.Client {
  const { config, Client } = clientSetup(url, base)
  return new Client(config)
}

export function createPool(url: string, options: PgConnectOptions = {}): pg.Pool {
  const limits = sessionLimitsSql(options.limits)
  const timeout = options.connectTimeoutMs ?? 10_000
  const hosts = parsePgUrl(url).hosts.length
  // Each host is given the timeout (as libpq's connect_timeout); the pool waits for all of them.
  const setup = clientSetup(url, { connectionTimeoutMillis: timeout, application_name: 'interlock' })
  const config: pg.PoolConfig & { onConnect?: (client: pg.PoolClient) => Promise<unknown> } = {
    ...setup.config,
    Client: setup.Client,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: timeout * hosts,
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
  const client = newClient(url, { connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000, application_name: 'interlock install' })
  client.on('error', () => {})
  try {
    await client.connect()
  } catch (e) {
    await client.end().catch(() => {})
    throw pgError(e, 'connecting', where)
  }
  return client
}
