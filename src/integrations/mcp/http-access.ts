/**
 * Who may reach `mcp-proxy --http`, decided before the proxy starts its
 * server: from [targets.<name>.proxy_http], the bind address and
 * --insecure-no-auth. The rules (docs/mcp.md, "Exposing the proxy over
 * HTTP"):
 * - on an address other than loopback, the Host names clients use must be
 *   listed (allowed_hosts): the proxy cannot know them, and without them any
 *   name pointed at it, a rebinding attacker's included, would be accepted;
 * - callers authenticate (static tokens, OAuth, or both), unless bound to a
 *   loopback address and the operator says --insecure-no-auth, knowing that
 *   every local process (and user) can then call through the proxy;
 * - OAuth on an address other than loopback needs `resource`, the URL
 *   clients reach the endpoint at (behind TLS, say), which the proxy cannot
 *   tell from a request.
 * Every mistake is reported at once, naming the key to set.
 */
import { tomlKeyPath } from '../../core/config/key-path.js'
import type { McpProxyHttpConfig } from '../../core/config/types.js'
import { ConfigError, UsageError } from '../../core/errors.js'
import { HttpAuth } from './http-auth.js'
import { isLoopback } from './http-guard.js'
import { discoverJwksUri } from './oauth-discovery.js'
import { OAuthTokens } from './oauth-tokens.js'
import { MIN_TOKEN_LENGTH, StaticTokens } from './static-tokens.js'

export const NO_AUTH_FLAG = '--insecure-no-auth'

export interface HttpAccess {
  bindHost: string
  allowedHosts: readonly string[]
  allowedOrigins: readonly string[]
  /** Configured; else derived from each request's Host (loopback only). */
  resource?: string
  /** Undefined: no authentication (--insecure-no-auth, loopback only). */
  auth?: HttpAuth
}

export interface HttpAccessOptions {
  target: string
  settings: McpProxyHttpConfig | undefined
  bindHost: string
  insecureNoAuth: boolean
}

// RFC 6750 b64token: what an Authorization: Bearer header can carry.
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

export async function httpAccess(o: HttpAccessOptions): Promise<HttpAccess> {
  const key = (...rest: string[]) => tomlKeyPath(['targets', o.target, 'proxy_http', ...rest])
  const s = o.settings ?? { allowedHosts: [], allowedOrigins: [], tokens: [] }
  const loopback = isLoopback(o.bindHost)
  const hasAuth = s.tokens.length > 0 || s.oauth !== undefined
  if (o.insecureNoAuth && !loopback) {
    throw new UsageError(`${NO_AUTH_FLAG} is only for a loopback address, and --http binds ${o.bindHost}`, {
      hint: `Bind 127.0.0.1 (or ::1), or configure authentication under [${key()}] (tokens or oauth, docs/mcp.md).`,
    })
  }
  if (o.insecureNoAuth && hasAuth) {
    throw new UsageError(`${NO_AUTH_FLAG} with authentication configured under [${key()}]`, {
      hint: `Drop ${NO_AUTH_FLAG} to require the configured ${[s.tokens.length > 0 ? 'tokens' : '', s.oauth ? 'OAuth' : ''].filter(Boolean).join(' and ')}, or remove them from the file.`,
    })
  }
  const problems: string[] = []
  if (!loopback && s.allowedHosts.length === 0) {
    problems.push(`${key('allowed_hosts')}: required when --http binds ${o.bindHost}, which is not a loopback address: the Host names clients reach the proxy by, e.g. ["mcp.example.com"]`)
  }
  if (!hasAuth && !o.insecureNoAuth) {
    problems.push(
      `${key()}: --http needs authentication: add [[${key('tokens')}]] (principal, token = "\${VAR}") or [${key('oauth')}] (issuer)${loopback ? `, or pass ${NO_AUTH_FLAG} to let every local process call unauthenticated` : ''}`,
    )
  }
  const seen = new Map<string, number>()
  s.tokens.forEach((t, i) => {
    if (t.token.length < MIN_TOKEN_LENGTH) problems.push(`${key('tokens', String(i), 'token')} (principal ${t.principal}): ${t.token.length} characters; use a random token of at least ${MIN_TOKEN_LENGTH}, e.g. \`openssl rand -hex 32\``)
    else if (!B64TOKEN.test(t.token)) problems.push(`${key('tokens', String(i), 'token')} (principal ${t.principal}): a bearer token is letters, digits and - . _ ~ + / (then = padding), e.g. \`openssl rand -hex 32\``)
    const before = seen.get(t.token)
    if (before !== undefined) problems.push(`${key('tokens', String(i), 'token')}: the same token as ${key('tokens', String(before), 'token')}: a token must name one principal`)
    else seen.set(t.token, i)
  })
  if (s.oauth && !loopback && s.resource === undefined) {
    problems.push(`${key('resource')}: required for OAuth when --http binds ${o.bindHost}: the URL clients reach the endpoint at, e.g. "https://mcp.example.com/mcp"`)
  }
  if (problems.length > 0) {
    throw new ConfigError(`mcp-proxy --http cannot start: target ${o.target}'s HTTP access is not configured`, problems, {
      hint: 'Set the keys listed in interlock.toml (docs/mcp.md, "Exposing the proxy over HTTP").',
    })
  }

  let oauth: OAuthTokens | undefined
  if (s.oauth) {
    let jwksUri = s.oauth.jwksUri
    if (jwksUri === undefined) {
      try {
        jwksUri = await discoverJwksUri(s.oauth.issuer)
      } catch (e) {
        throw new ConfigError(`mcp-proxy --http cannot start: the signing keys of the issuer ${s.oauth.issuer} were not found`, [`${key('oauth', 'issuer')}: ${(e as Error).message}`], {
          hint: `Check the issuer (exactly as its tokens' iss claim), or set ${key('oauth', 'jwks_uri')} to where it publishes its keys.`,
          cause: e,
        })
      }
    }
    oauth = new OAuthTokens(s.oauth, jwksUri)
  }
  return {
    bindHost: o.bindHost,
    allowedHosts: s.allowedHosts,
    allowedOrigins: s.allowedOrigins,
    ...(s.resource === undefined ? {} : { resource: s.resource }),
    ...(hasAuth ? { auth: new HttpAuth(s.tokens.length > 0 ? new StaticTokens(s.tokens) : undefined, oauth) } : {}),
  }
}
