/**
 * Multi-host connection strings, as libpq reads them:
 * `postgresql://user:pw@h1:5432,h2:5433/db?target_session_attrs=read-write`.
 * node-pg's own parser refuses a host list, and a failover manager (Patroni,
 * a cloud service) moves the primary between hosts: so each connection tries
 * the hosts, and for `read-write` or `primary` looks at the session and moves
 * on when the server is a standby. A pool built on it picks again for every
 * new connection, so that once a standby is promoted new connections go to
 * it (connect.ts).
 *
 * libpq's semantics (target_session_attrs):
 * - any (default): the first host that accepts a connection;
 * - read-write / read-only: transaction_read_only off / on in the session;
 * - primary / standby: pg_is_in_recovery() false / true;
 * - prefer-standby: a standby if any host is one, else as `any`.
 * Hosts are tried in their order, except that for read-write, read-only,
 * primary and standby the host that last qualified is tried first: after a
 * failover the dead primary is usually first in the list, and trying it
 * first on every new connection would cost each a connect timeout.
 *
 * Ports: per host (`h1:5432,h2:5433`), or `?port=` (one for all, or one per
 * host); `?host=` may list hosts too. Nothing here ever names the password.
 */
import pg from 'pg'
import { ConfigError } from '../../errors.js'

export const SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const
export type SessionAttrs = (typeof SESSION_ATTRS)[number]

export interface PgHost {
  host: string
  /** Absent: pg's default (PGPORT, else 5432). */
  port?: number
}

export interface PgTarget {
  hosts: PgHost[]
  attrs: SessionAttrs
  /** The connection string for one host, target_session_attrs and host lists removed (pg would not understand them). */
  urlFor(host: PgHost): string
}

/** `h1:5432` (brackets kept around an IPv6 address). */
export function hostLabel(h: PgHost): string {
  return h.port === undefined ? h.host || 'localhost' : `${h.host || 'localhost'}:${h.port}`
}

/** Parses a connection string: the hosts, the session attributes asked for, and one URL per host. */
export function parsePgUrl(url: string): PgTarget {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i.exec(url)
  if (!m) return { hosts: [{ host: '' }], attrs: 'any', urlFor: () => url }
  const [, scheme, authority, path, query = ''] = m as unknown as [string, string, string, string, string | undefined]
  const at = authority.lastIndexOf('@')
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : ''
  const params = new URLSearchParams(query.slice(1))
  const attrs = (params.get('target_session_attrs') ?? 'any') as SessionAttrs
  if (!SESSION_ATTRS.includes(attrs)) {
    throw new ConfigError(`[store] url: target_session_attrs = "${attrs}" is not one of ${SESSION_ATTRS.join(', ')}`, [`target_session_attrs = "${attrs}"`])
  }
  params.delete('target_session_attrs')
  let hosts = splitHosts(authority.slice(at + 1))
  // libpq also takes the hosts and ports as parameters (`?host=h1,h2&port=5432,5433`).
  const hostParam = params.get('host')
  if (hostParam?.includes(',')) {
    hosts = hostParam.split(',').map((host) => ({ host: host.trim() }))
    params.delete('host')
  }
  const portParam = params.get('port')
  if (portParam?.includes(',') || (portParam && hosts.length > 1)) {
    const ports = portParam.split(',').map((p) => port(p.trim()))
    if (ports.length !== 1 && ports.length !== hosts.length) {
      throw new ConfigError(`[store] url: ${ports.length} ports for ${hosts.length} hosts (give one port, or one per host)`, ['port'])
    }
    hosts = hosts.map((h, i) => ({ host: h.host, port: h.port ?? ports[ports.length === 1 ? 0 : i] }))
    params.delete('port')
  }
  return {
    hosts,
    attrs,
    urlFor: (h) => {
      const q = new URLSearchParams(params)
      // A socket directory cannot stand in the authority: it goes back where libpq takes it too.
      const socket = h.host.startsWith('/')
      if (socket) q.set('host', h.host)
      if (socket && h.port !== undefined) q.set('port', String(h.port))
      const authority = socket ? '' : `${h.host}${h.port === undefined ? '' : `:${h.port}`}`
      const rest = q.toString()
      return `${scheme}${userinfo}${authority}${path}${rest ? `?${rest}` : ''}`
    },
  }
}

function splitHosts(list: string): PgHost[] {
  const hosts: PgHost[] = []
  // A comma inside brackets belongs to no IPv6 address, so splitting on every comma is safe.
  for (const item of list.split(',')) {
    const v6 = /^(\[[^\]]*\])(?::(\d*))?$/.exec(item)
    if (v6) {
      hosts.push({ host: v6[1]!, port: v6[2] ? port(v6[2]) : undefined })
      continue
    }
    const colon = item.lastIndexOf(':')
    if (colon < 0) hosts.push({ host: item })
    else hosts.push({ host: item.slice(0, colon), port: item.slice(colon + 1) ? port(item.slice(colon + 1)) : undefined })
  }
  return hosts
}

function port(text: string): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new ConfigError(`[store] url: "${text}" is not a port`, ['port'])
  return n
}

/** One statement tells every attribute: whether the server is in recovery, whether the session may write. */
const SESSION_CHECK = `SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only`

interface Session {
  recovery: boolean
  readOnly: boolean
}

function qualifies(attrs: SessionAttrs, s: Session): boolean {
  switch (attrs) {
    case 'read-write':
      return !s.readOnly
    case 'read-only':
      return s.readOnly
    case 'primary':
      return !s.recovery
    case 'standby':
    case 'prefer-standby':
      return s.recovery
    default:
      return true
  }
}

function what(s: Session): string {
  return s.recovery ? 'a standby (in recovery)' : s.readOnly ? 'read-only' : 'a primary'
}

/** Which host qualified last, shared by every connection of one pool. */
export class HostChoice {
  last: number | undefined

  constructor(readonly target: PgTarget) {}

  /** The order to try the hosts in (indexes). */
  order(): number[] {
    const all = this.target.hosts.map((_, i) => i)
    const attrs = this.target.attrs
    if (this.last === undefined || attrs === 'any' || attrs === 'prefer-standby') return all
    return [this.last, ...all.filter((i) => i !== this.last)]
  }
}

/** EventEmitter's own fields: the listeners the pool set on the client must survive a new attempt. */
const EMITTER_KEYS = new Set(['_events', '_eventsCount', '_maxListeners'])

type ClientInternals = {
  connection: { removeAllListeners(): void; on(e: string, f: () => void): void; end(): void; stream?: { destroy(): void } }
  connectionTimeoutHandle?: NodeJS.Timeout
}

/**
 * A pg.Client class that connects to the first host of `choice` that
 * qualifies. A pg.Client connects once in its life; a host that refuses or
 * does not qualify is dropped and the client's state is that of a fresh
 * pg.Client for the next host (all a pg.Client holds is set by its
 * constructor), so the object the pool holds is the one connected.
 * `base` is the rest of the client's config (timeouts, application_name).
 */
export function selectingClient(choice: HostChoice, base: pg.ClientConfig = {}): typeof pg.Client {
  const target = choice.target
  const configFor = (h: PgHost): pg.ClientConfig => ({ ...base, connectionString: target.urlFor(h) })
  return class SelectingClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionString: target.urlFor(target.hosts[0]!) })
    }

    override connect(): Promise<void>
    override connect(callback: (err: Error) => void): void
    override connect(callback?: (err: Error) => void): Promise<void> | void {
      const p = this.select()
      if (!callback) return p
      p.then(() => callback(undefined as unknown as Error), callback)
    }

    private async select(): Promise<void> {
      // A connection lost during the session check emits 'error' on the client besides failing the query,
      // and a pool client has no listener of the pool's until connect() returns: without one of its own
      // here, a host going away at that moment (a failover) would end the process.
      const meanwhile = () => {}
      this.on('error', meanwhile)
      try {
        await this.selectHost()
      } finally {
        this.off('error', meanwhile)
      }
    }

    private async selectHost(): Promise<void> {
      const passes: SessionAttrs[] = target.attrs === 'prefer-standby' ? ['prefer-standby', 'any'] : [target.attrs]
      // What each host said, the last pass's word kept.
      const seen = new Map<string, string>()
      for (const attrs of passes) {
        for (const i of choice.order()) {
          const h = target.hosts[i]!
          this.adopt(configFor(h))
          let session: Session | undefined
          try {
            await super.connect()
            if (attrs === 'any' && target.attrs === 'any') {
              choice.last = i
              return
            }
            const { rows } = await super.query(SESSION_CHECK)
            session = { recovery: rows[0].recovery === true, readOnly: rows[0].read_only === 'on' }
          } catch (e) {
            this.drop()
            seen.set(hostLabel(h), `${hostLabel(h)}: ${e instanceof Error ? e.message : String(e)}`)
            continue
          }
          if (qualifies(attrs, session)) {
            choice.last = i
            return
          }
          this.drop()
          seen.set(hostLabel(h), `${hostLabel(h)} is ${what(session)}`)
        }
      }
      const err = new Error(`no host accepted a ${target.attrs === 'any' ? '' : `${target.attrs} `}session: ${[...seen.values()].join('; ')}`) as Error & { code: string }
      // SQLSTATE 08001 (sqlclient_unable_to_establish_sqlconnection): transient, the store retries.
      err.code = '08001'
      throw err
    }

    /** This client's state becomes that of a fresh pg.Client for `config`. */
    private adopt(config: pg.ClientConfig): void {
      const fresh = new pg.Client(config) as unknown as Record<string, unknown>
      const self = this as unknown as Record<string, unknown>
      for (const key of Object.keys(fresh)) if (!EMITTER_KEYS.has(key)) self[key] = fresh[key]
      Object.defineProperty(this, 'password', { configurable: true, enumerable: false, writable: true, value: fresh.password })
    }

    /** Ends this attempt's connection without a word to the client's listeners (the pool's among them). */
    private drop(): void {
      const self = this as unknown as ClientInternals
      clearTimeout(self.connectionTimeoutHandle)
      const con = self.connection
      con.removeAllListeners()
      // The stream still reports to the connection: an 'error' with no listener would throw.
      con.on('error', () => {})
      try {
        con.end()
      } catch {}
      con.stream?.destroy()
    }
  }
}
