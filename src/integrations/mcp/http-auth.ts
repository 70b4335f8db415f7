/**
 * Who a request to `mcp-proxy --http` comes from, by its `Authorization:
 * Bearer` header: one of the static tokens (the principal it names), else
 * an OAuth access token (oauth-tokens.ts). A request that proves nobody is
 * answered 401 with a `WWW-Authenticate: Bearer` challenge, which with OAuth
 * points at the protected resource metadata (RFC 9728) a client discovers
 * the authorization server from; a token short of the required scopes, 403
 * insufficient_scope (MCP authorization, 2025-11-25, "Error Handling").
 *
 * The resource is the URL clients reach the endpoint at: configured, or on
 * a loopback address the request's own (already validated) Host, since an
 * MCP client checks that the metadata's `resource` is the URL it used.
 */
import type { Principal } from './principal.js'
import type { OAuthTokens } from './oauth-tokens.js'
import type { StaticTokens } from './static-tokens.js'

export const METADATA_PATH = '/.well-known/oauth-protected-resource'

export type AuthOutcome =
  | { ok: true; principal: Principal }
  | { ok: false; status: 401 | 403 | 503; message: string; challenge?: string }

export interface Resource {
  /** e.g. http://127.0.0.1:8931/mcp */
  url: string
  /** Its protected resource metadata: http://127.0.0.1:8931/.well-known/oauth-protected-resource/mcp */
  metadataUrl: string
}

export function resourceOf(url: string): Resource {
  const u = new URL(url)
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/$/, '')
  return { url, metadataUrl: `${u.origin}${METADATA_PATH}${path}` }
}

export class HttpAuth {
  constructor(
    readonly tokens: StaticTokens | undefined,
    readonly oauth: OAuthTokens | undefined,
  ) {}

  async authenticate(authorization: string | undefined, resource: Resource): Promise<AuthOutcome> {
    const token = bearerToken(authorization)
    if (token === undefined) return this.deny(401, 'authentication required: send Authorization: Bearer <token>', resource)
    const principal = this.tokens?.find(token)
    if (principal !== undefined) return { ok: true, principal: { id: `token:${principal}`, via: 'bearer' } }
    if (!this.oauth) return this.deny(401, 'the bearer token is not one of this proxy\'s tokens', resource, 'invalid_token')
    const check = await this.oauth.verify(token, resource.url)
    if (check.ok) return check
    if (check.status === 503) return { ok: false, status: 503, message: check.description }
    return this.deny(check.status, check.description, resource, check.error)
  }

  /** The protected resource metadata document (RFC 9728 §2), served only with OAuth. */
  metadata(resource: Resource): Record<string, unknown> | undefined {
    if (!this.oauth) return undefined
    const scopes = this.oauth.config.scopes
    return {
      resource: resource.url,
      authorization_servers: [this.oauth.config.issuer],
      bearer_methods_supported: ['header'],
      ...(scopes.length > 0 ? { scopes_supported: scopes } : {}),
      resource_name: 'Interlock MCP proxy',
    }
  }

  /** How callers authenticate, for the log line at start: names and URLs, never a token. */
  describe(): string {
    const ways: string[] = []
    if (this.tokens && this.tokens.size > 0) ways.push(`static bearer tokens (${this.tokens.size}, principals ${this.tokens.principals().join(', ')})`)
    if (this.oauth) {
      const o = this.oauth.config
      ways.push(`OAuth JWT access tokens (issuer ${o.issuer}, keys ${this.oauth.jwksUri}, audience ${o.audience ?? 'the resource URL'}${o.scopes.length > 0 ? `, scopes ${o.scopes.join(' ')}` : ''})`)
    }
    return ways.join(' or ')
  }

  private deny(status: 401 | 403, message: string, resource: Resource, error?: 'invalid_token' | 'insufficient_scope'): AuthOutcome {
    const params: string[] = []
    if (!this.oauth) params.push('realm="interlock"')
    if (error) params.push(`error="${error}"`, `error_description="${quotable(message)}"`)
    if (this.oauth) {
      // The scopes a token needs, so a client asks for them and no more (MCP authorization, scope selection).
      if (this.oauth.config.scopes.length > 0) params.push(`scope="${this.oauth.config.scopes.join(' ')}"`)
      params.push(`resource_metadata="${resource.metadataUrl}"`)
    }
    return { ok: false, status, message, challenge: `Bearer ${params.join(', ')}` }
  }
}

function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization ?? '')
  return m?.[1]
}

// A quoted-string of RFC 9110 may not hold a bare quote or backslash.
function quotable(text: string): string {
  return text.replace(/["\\]/g, "'")
}
