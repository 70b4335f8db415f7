/**
 * DNS rebinding protection for `mcp-proxy --http` (MCP transports,
 * "Security Warning": servers must validate Origin). A web page can make a
 * browser send requests to the proxy under a name the attacker controls,
 * resolved to the proxy's address: such a request carries the attacker's
 * name in Host, and the page's origin in Origin. Every request whose Host is
 * not one the proxy is reached by, or whose Origin is present and not an
 * allowed one, is refused 403 before anything else is looked at. A request
 * without Origin comes from a client that is not a browser and is let on.
 *
 * Bound to a loopback address, the loopback names at the bound port are
 * always allowed (no rebinding puts them in Host or Origin); elsewhere only
 * the configured [targets.<name>.proxy_http] allowed_hosts.
 */
import { isIP } from 'node:net'

export class HostGuard {
  private readonly hosts: { name: string; port?: string }[]
  private readonly origins: Set<string>

  constructor(o: { bindHost: string; port: number; allowedHosts: readonly string[]; allowedOrigins: readonly string[] }) {
    const local = isLoopback(o.bindHost) ? [...new Set(['localhost', '127.0.0.1', '[::1]', bracketed(o.bindHost)])] : []
    this.hosts = [...local.map((name) => ({ name, port: String(o.port) })), ...o.allowedHosts.map(hostEntry)]
    this.origins = new Set([...local.map((name) => `http://${name}:${o.port}`), ...o.allowedOrigins].map((x) => originOf(x) ?? x))
  }

  /** What is wrong with the request's Host or Origin, if anything: the 403's message. */
  refusal(headers: { host?: string; origin?: string | string[] }): string | undefined {
    const host = headers.host === undefined ? undefined : hostEntry(headers.host)
    if (!host || !this.hosts.some((h) => h.name === host.name && (h.port === undefined || h.port === (host.port ?? '80')))) return `Invalid Host: ${shown(headers.host)}`
    const origin = headers.origin
    if (origin === undefined) return undefined
    if (typeof origin !== 'string' || !this.origins.has(originOf(origin) ?? '')) return `Invalid Origin: ${shown(String(origin))}`
    return undefined
  }

  /** The allowed Host and Origin values, for the log line at start. */
  describe(): string {
    const origins = [...this.origins]
    return `hosts ${this.hosts.map((h) => (h.port ? `${h.name}:${h.port}` : h.name)).join(', ')}; origins ${origins.length > 0 ? origins.join(', ') : 'none'} (requests without Origin allowed)`
  }
}

/** 127.0.0.0/8, ::1 or localhost: only this machine can connect. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true
  if (isIP(h) === 4) return h.startsWith('127.')
  return /^::ffff:127\./.test(h)
}

function bracketed(host: string): string {
  return isIP(host) === 6 ? `[${host.toLowerCase()}]` : host.toLowerCase()
}

/** "name", "name:port", "[v6]" or "[v6]:port", lower-cased. */
function hostEntry(text: string): { name: string; port?: string } {
  const t = text.trim().toLowerCase()
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(t)
  if (!m) return { name: t }
  return m[2] === undefined ? { name: m[1]! } : { name: m[1]!, port: m[2] }
}

function originOf(text: string): string | undefined {
  try {
    const u = new URL(text)
    return u.origin === 'null' ? undefined : u.origin
  } catch {
    return undefined
  }
}

function shown(value: string | undefined): string {
  if (value === undefined) return '(none)'
  return value.length > 200 ? `${value.slice(0, 200)}…` : value
}
