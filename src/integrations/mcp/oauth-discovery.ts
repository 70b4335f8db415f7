/**
 * Where an OAuth issuer publishes its signing keys, when interlock.toml does
 * not say (`jwks_uri`): its authorization server metadata (RFC 8414), or its
 * OpenID Connect discovery document, tried in the order the MCP
 * authorization specification gives clients (2025-11-25, "Authorization
 * Server Metadata Discovery"). The document must name the same issuer
 * (RFC 8414 §3.3): metadata naming another is not this issuer's.
 */

export async function discoverJwksUri(issuer: string, timeoutMs = 10_000): Promise<string> {
  const tried: string[] = []
  for (const url of metadataUrls(issuer)) {
    let doc: { issuer?: unknown; jwks_uri?: unknown }
    try {
      const res = await fetch(url, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) })
      if (res.status !== 200) {
        await res.body?.cancel()
        tried.push(`${url}: HTTP ${res.status}`)
        continue
      }
      doc = (await res.json()) as typeof doc
    } catch (e) {
      tried.push(`${url}: ${(e as Error).message}`)
      continue
    }
    if (doc.issuer !== issuer) throw new Error(`${url} names the issuer ${JSON.stringify(doc.issuer)}, not ${JSON.stringify(issuer)}`)
    if (typeof doc.jwks_uri !== 'string') throw new Error(`${url} has no jwks_uri`)
    return doc.jwks_uri
  }
  throw new Error(`no metadata found for issuer ${issuer}: ${tried.join('; ')}`)
}

/** RFC 8414 §3.1 path insertion first, then OpenID Connect's forms. */
export function metadataUrls(issuer: string): string[] {
  const u = new URL(issuer)
  const path = u.pathname.replace(/\/$/, '')
  if (path === '') return [`${u.origin}/.well-known/oauth-authorization-server`, `${u.origin}/.well-known/openid-configuration`]
  return [`${u.origin}/.well-known/oauth-authorization-server${path}`, `${u.origin}/.well-known/openid-configuration${path}`, `${u.origin}${path}/.well-known/openid-configuration`]
}
