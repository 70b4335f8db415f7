/**
 * A small OAuth 2.1 authorization server on 127.0.0.1, for what a resource
 * server must check: its metadata (RFC 8414) at
 * /.well-known/oauth-authorization-server, its signing keys (a JWKS) at
 * /jwks, and a token endpoint for the client_credentials grant (client id
 * and secret by HTTP Basic) that issues JWT access tokens whose `aud` is the
 * `resource` asked for (RFC 8707), as an MCP client asks. Tests also mint
 * tokens directly with `token()`: expired, for another audience, signed by a
 * key the issuer does not publish (`forged`), from another issuer.
 *
 * Keys from jose's generateKeyPair; no vitest import, so bench/ uses it too.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose'

export interface OAuthIssuer {
  /** http://127.0.0.1:<port>, as its tokens' `iss`. */
  issuer: string
  jwksUri: string
  /** Requests it answered, by path (e.g. how often /jwks was fetched). */
  hits: Map<string, number>
  /**
   * A signed access token. Defaults: sub "alice", iss the issuer, exp in an
   * hour; `claims` overrides or adds (aud, scope, exp...). `forged`: signed
   * by another key under the issuer's key id.
   */
  token(claims?: JWTPayload, o?: { forged?: boolean }): Promise<string>
  close(): Promise<void>
}

export interface OAuthIssuerOptions {
  /** client_credentials clients: id → secret. The token's sub is the client id. */
  clients?: Record<string, string>
}

const KID = 'test-key-1'
const ALG = 'ES256'

export async function startOAuthIssuer(o: OAuthIssuerOptions = {}): Promise<OAuthIssuer> {
  const keys = await generateKeyPair(ALG)
  const foreign = await generateKeyPair(ALG)
  const publicJwk = { ...(await exportJWK(keys.publicKey)), kid: KID, alg: ALG, use: 'sig' }
  const hits = new Map<string, number>()
  let issuer = ''

  const sign = (key: CryptoKey, claims: JWTPayload) => {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({ sub: 'alice', iss: issuer, iat: now, exp: now + 3600, jti: randomUUID(), ...claims }).setProtectedHeader({ alg: ALG, kid: KID, typ: 'at+jwt' }).sign(key)
  }

  const server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname
      hits.set(path, (hits.get(path) ?? 0) + 1)
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
      if (req.method === 'GET' && path === '/.well-known/oauth-authorization-server') {
        return json(200, {
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          response_types_supported: ['code'],
          grant_types_supported: ['client_credentials'],
          token_endpoint_auth_methods_supported: ['client_secret_basic'],
          code_challenge_methods_supported: ['S256'],
        })
      }
      if (req.method === 'GET' && path === '/jwks') return json(200, { keys: [publicJwk] })
      if (req.method === 'POST' && path === '/token') {
        const form = new URLSearchParams(await body(req))
        const [id, secret] = basic(req.headers.authorization)
        if (id === undefined || o.clients?.[id] === undefined || o.clients[id] !== secret) return json(401, { error: 'invalid_client' })
        if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' })
        const resource = form.get('resource')
        const scope = form.get('scope') ?? undefined
        const accessToken = await sign(keys.privateKey, { sub: id, ...(resource ? { aud: resource } : {}), ...(scope ? { scope } : {}) })
        return json(200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3600, ...(scope ? { scope } : {}) })
      }
      json(404, { error: 'not_found' })
    })().catch((e: Error) => res.writeHead(500).end(e.message))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    hits,
    token: (claims = {}, opts = {}) => sign(opts.forged ? foreign.privateKey : keys.privateKey, claims),
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    req.setEncoding('utf8').on('data', (d: string) => (text += d)).once('end', () => resolve(text)).once('error', reject)
  })
}

function basic(header: string | undefined): [string | undefined, string | undefined] {
  const m = /^Basic (.+)$/i.exec(header ?? '')
  if (!m) return [undefined, undefined]
  const text = Buffer.from(m[1]!, 'base64').toString('utf8')
  const i = text.indexOf(':')
  return i < 0 ? [undefined, undefined] : [decodeURIComponent(text.slice(0, i)), decodeURIComponent(text.slice(i + 1))]
}
