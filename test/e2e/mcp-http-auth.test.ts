/**
 * Who may call `interlock mcp-proxy --http`: the built binary in front of the
 * real server-memory (through the recording wire), with [targets.memory.
 * proxy_http] set. A request of a rebinding page (Host or Origin not
 * allowed) is refused 403, one without valid credentials 401 (403 when its
 * token lacks a scope), and one naming another principal's session 404:
 * none of them creates a session, is journaled (`outbox list`) or reaches
 * the server (the wire's record). Static bearer tokens and OAuth JWT access
 * tokens from a local issuer (test/helpers/oauth-issuer.ts); the SDK's own
 * Client both with a token in hand and doing the OAuth flow itself.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { httpClient, INITIALIZE, memoryToml, proxyOverHttp, q, rawRequest, resultMeta, resultText, sessionIdOf, wireLog } from '../helpers/mcp.js'
import { startOAuthIssuer, type OAuthIssuer } from '../helpers/oauth-issuer.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const CI_BOT = randomBytes(24).toString('hex')
const CI_BOT_NEXT = randomBytes(24).toString('hex')
const OPS = randomBytes(24).toString('hex')
const ENV = { CI_BOT_TOKEN: CI_BOT, CI_BOT_TOKEN_NEXT: CI_BOT_NEXT, OPS_TOKEN: OPS }

/** Two principals; ci-bot has two tokens (one being rotated in). */
const TOKENS = `[[targets.memory.proxy_http.tokens]]
principal = "ci-bot"
token = "\${CI_BOT_TOKEN}"
[[targets.memory.proxy_http.tokens]]
principal = "ci-bot"
token = "\${CI_BOT_TOKEN_NEXT}"
[[targets.memory.proxy_http.tokens]]
principal = "ops"
token = "\${OPS_TOKEN}"
`

const oauthToml = (issuer: string, scopes = '') => `[targets.memory.proxy_http.oauth]\nissuer = ${q(issuer)}\n${scopes}`

/** A folder fronting server-memory through the wire, create_entities journaled at tier 1, with `access` TOML. */
function scratch(access: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-auth-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'interlock.toml'), memoryToml(dir, { extra: `[targets.memory.tools.create_entities]\ntier = 1\n${access}` }))
  return dir
}

const create = (name: string) => ({ name: 'create_entities', arguments: { entities: [{ name, entityType: 'person', observations: [] }] } })
const rawCall = (name: string) => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: create(name) })

async function journaled(cwd: string): Promise<{ effectId: string; state: string }[]> {
  const run = await interlock(['outbox', 'list', '--json'], { cwd, env: ENV })
  expect(run.code, run.stderr).toBe(0)
  return (JSON.parse(run.stdout) as { effects: { effectId: string; state: string }[] }).effects
}

/** create_entities calls that reached the server. */
const sent = (cwd: string) => wireLog(join(cwd, 'wire.log')).filter((c) => c.tool === 'create_entities').length

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const errorOf = (body: string) => (JSON.parse(body) as { error: { message: string } }).error.message

describe('Host and Origin (DNS rebinding)', () => {
  it('a Host or Origin not allowed is refused 403 before anything else: no session, nothing journaled, nothing sent', async () => {
    const cwd = scratch(`[targets.memory.proxy_http]\nallowed_origins = ["https://app.example.test"]\n${TOKENS}`)
    const proxy = await proxyOverHttp({ cwd, env: ENV })
    const port = new URL(proxy.url).port
    try {
      // A page on a name the attacker resolved to 127.0.0.1: its name in Host, its origin in Origin.
      const rebound = await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT), host: `attacker.example:${port}` }, body: INITIALIZE })
      expect(rebound.status).toBe(403)
      expect(errorOf(rebound.body)).toBe(`Invalid Host: attacker.example:${port}`)
      expect(rebound.headers['mcp-session-id']).toBeUndefined()
      const page = await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT), origin: `http://attacker.example:${port}` }, body: INITIALIZE })
      expect(page.status).toBe(403)
      expect(errorOf(page.body)).toBe(`Invalid Origin: http://attacker.example:${port}`)
      // Another port of this machine is another origin, and the loopback names at another port other hosts.
      expect((await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT), origin: 'http://localhost:1' }, body: INITIALIZE })).status).toBe(403)
      expect((await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT), host: 'localhost:1' }, body: INITIALIZE })).status).toBe(403)
      // Refused before authentication: no credentials needed to be told so, none looked at.
      expect((await rawRequest(proxy.url, { headers: { host: `attacker.example:${port}` }, body: INITIALIZE })).status).toBe(403)

      // A session of a legitimate client; then the rebinding page replays its id with a tool call.
      const client = await httpClient(proxy.url, { headers: bearer(CI_BOT) })
      const sid = sessionIdOf(client)
      for (const headers of [{ host: `attacker.example:${port}` }, { origin: 'http://attacker.example' }, { origin: 'null' }] as Record<string, string>[]) {
        const r = await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18', ...headers }, body: rawCall('mallory') })
        expect(r.status, JSON.stringify(headers)).toBe(403)
      }
      expect(await journaled(cwd)).toEqual([])
      expect(sent(cwd)).toBe(0)

      // The loopback names at the bound port, and the configured origin, are let in; so is a request without Origin.
      const initialized = await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT), host: `localhost:${port}`, origin: `http://localhost:${port}` }, body: INITIALIZE })
      expect(initialized.status).toBe(200)
      expect(initialized.headers['mcp-session-id']).toBeTruthy()
      for (const headers of [{ host: `[::1]:${port}`, origin: `http://127.0.0.1:${port}` }, { origin: 'https://app.example.test' }, {}] as Record<string, string>[]) {
        const r = await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18', ...headers }, body: { jsonrpc: '2.0', id: 3, method: 'ping' } })
        expect(r.status, JSON.stringify(headers)).toBe(200)
        expect(r.body).toContain('"result":{}')
      }
      const done = await client.callTool(create('carol'))
      expect(resultMeta(done)['interlock/state'], resultText(done)).toBe('COMMITTED')
      expect(await journaled(cwd)).toHaveLength(1)
      expect(sent(cwd)).toBe(1)
      await client.close()
      expect(proxy.stderr()).toContain(`mcp-proxy: HTTP access: hosts localhost:${port}, 127.0.0.1:${port}, [::1]:${port}; origins http://localhost:${port}, http://127.0.0.1:${port}, http://[::1]:${port}, https://app.example.test`)
    } finally {
      await proxy.close()
    }
  })

  it('bound to an address other than loopback, only the Host names listed in allowed_hosts', async () => {
    const cwd = scratch(`[targets.memory.proxy_http]\nallowed_hosts = ["mcp.example.test"]\n${TOKENS}`)
    const proxy = await proxyOverHttp({ cwd, env: ENV, bind: '0.0.0.0:0' })
    const port = new URL(proxy.url).port
    const url = `http://127.0.0.1:${port}/mcp`
    try {
      const named = await rawRequest(url, { headers: { ...bearer(OPS), host: `mcp.example.test:${port}` }, body: INITIALIZE })
      expect(named.status).toBe(200)
      const session = { 'mcp-session-id': String(named.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' }
      const ping = { jsonrpc: '2.0', id: 3, method: 'ping' }
      expect((await rawRequest(url, { headers: { ...bearer(OPS), ...session, host: 'mcp.example.test' }, body: ping })).status).toBe(200)
      expect((await rawRequest(url, { headers: { ...bearer(OPS), ...session, host: 'other.example.test' }, body: ping })).status).toBe(403)
      const loopback = await rawRequest(url, { headers: bearer(OPS), body: INITIALIZE })
      expect(loopback.status).toBe(403)
      expect(errorOf(loopback.body)).toBe(`Invalid Host: 127.0.0.1:${port}`)
    } finally {
      await proxy.close()
    }
  })
})

describe('starting --http', () => {
  it('without authentication configured: refused (exit 3, naming the keys), unless bound to loopback with --insecure-no-auth', async () => {
    const bare = scratch('')
    const refused = await interlock(['mcp-proxy', '--http', '127.0.0.1:0'], { cwd: bare })
    expect(refused.code, refused.stderr).toBe(3)
    expect(refused.stderr).toContain('targets.memory.proxy_http: --http needs authentication: add [[targets.memory.proxy_http.tokens]]')
    expect(refused.stderr).toContain('--insecure-no-auth')

    const open = await proxyOverHttp({ cwd: bare, args: ['--insecure-no-auth'] })
    try {
      expect(open.stderr()).toContain('NO authentication (--insecure-no-auth)')
      const client = await httpClient(open.url)
      expect(resultMeta(await client.callTool(create('dave')))['interlock/state']).toBe('COMMITTED')
      await client.close()
      // Host and Origin are checked all the same.
      expect((await rawRequest(open.url, { headers: { origin: 'http://attacker.example' }, body: INITIALIZE })).status).toBe(403)
    } finally {
      await open.close()
    }

    const anywhere = await interlock(['mcp-proxy', '--http', '0.0.0.0:0', '--insecure-no-auth'], { cwd: bare })
    expect(anywhere.code, anywhere.stderr).toBe(2)
    expect(anywhere.stderr).toContain('--insecure-no-auth is only for a loopback address, and --http binds 0.0.0.0')
    const stdio = await interlock(['mcp-proxy', '--insecure-no-auth'], { cwd: bare })
    expect(stdio.code, stdio.stderr).toBe(2)
    expect(stdio.stderr).toContain('--http')
  })

  it('on an address other than loopback: allowed_hosts is required, and --insecure-no-auth with tokens configured is a contradiction', async () => {
    const bare = scratch('')
    const nothing = await interlock(['mcp-proxy', '--http', '0.0.0.0:0'], { cwd: bare })
    expect(nothing.code, nothing.stderr).toBe(3)
    expect(nothing.stderr).toContain('targets.memory.proxy_http.allowed_hosts: required when --http binds 0.0.0.0')
    expect(nothing.stderr).toContain('targets.memory.proxy_http: --http needs authentication')

    const tokens = scratch(TOKENS)
    const noHosts = await interlock(['mcp-proxy', '--http', '0.0.0.0:0'], { cwd: tokens, env: ENV })
    expect(noHosts.code, noHosts.stderr).toBe(3)
    expect(noHosts.stderr).toContain('targets.memory.proxy_http.allowed_hosts: required')
    expect(noHosts.stderr).not.toContain('needs authentication')
    const both = await interlock(['mcp-proxy', '--http', '127.0.0.1:0', '--insecure-no-auth'], { cwd: tokens, env: ENV })
    expect(both.code, both.stderr).toBe(2)
    expect(both.stderr).toContain('--insecure-no-auth with authentication configured under [targets.memory.proxy_http]')
  })

  it('a token written in the file, a short one, or an issuer without metadata: exit 3, naming the key and never the token', async () => {
    const literal = await interlock(['mcp-proxy', '--http', '127.0.0.1:0'], { cwd: scratch(`[[targets.memory.proxy_http.tokens]]\nprincipal = "ci-bot"\ntoken = ${q(CI_BOT)}\n`) })
    expect(literal.code, literal.stderr).toBe(3)
    expect(literal.stderr).toContain('targets.memory.proxy_http.tokens.0.token')
    expect(literal.stderr).toContain('${VAR} reference')

    const short = await interlock(['mcp-proxy', '--http', '127.0.0.1:0'], { cwd: scratch(TOKENS), env: { ...ENV, OPS_TOKEN: 'hunter2' } })
    expect(short.code, short.stderr).toBe(3)
    expect(short.stderr).toContain('targets.memory.proxy_http.tokens.2.token (principal ops): 7 characters')
    expect(short.stderr).not.toContain('hunter2')

    const issuer = await startOAuthIssuer()
    const gone = issuer.issuer
    await issuer.close()
    const lost = await interlock(['mcp-proxy', '--http', '127.0.0.1:0'], { cwd: scratch(oauthToml(gone)) })
    expect(lost.code, lost.stderr).toBe(3)
    expect(lost.stderr).toContain(`the signing keys of the issuer ${gone} were not found`)
    expect(lost.stderr).toContain('targets.memory.proxy_http.oauth.jwks_uri')
  })
})

describe('static bearer tokens', () => {
  it('each token proves its principal; none, another scheme or an unknown token: 401, nothing journaled, nothing sent', async () => {
    const cwd = scratch(TOKENS)
    const proxy = await proxyOverHttp({ cwd, env: ENV })
    try {
      const none = await rawRequest(proxy.url, { body: INITIALIZE })
      expect(none.status).toBe(401)
      expect(none.headers['www-authenticate']).toBe('Bearer realm="interlock"')
      expect(none.headers['mcp-session-id']).toBeUndefined()
      const basic = await rawRequest(proxy.url, { headers: { authorization: `Basic ${Buffer.from(`ci-bot:${CI_BOT}`).toString('base64')}` }, body: INITIALIZE })
      expect(basic.status).toBe(401)
      const unknown = await rawRequest(proxy.url, { headers: bearer(randomBytes(24).toString('hex')), body: INITIALIZE })
      expect(unknown.status).toBe(401)
      expect(unknown.headers['www-authenticate']).toMatch(/^Bearer realm="interlock", error="invalid_token", error_description=".+"$/)
      // One character off is as unknown as any other.
      expect((await rawRequest(proxy.url, { headers: bearer(`${CI_BOT.slice(0, -1)}${CI_BOT.endsWith('0') ? '1' : '0'}`), body: INITIALIZE })).status).toBe(401)
      await expect(httpClient(proxy.url, { headers: bearer('not-a-token-of-this-proxy') })).rejects.toThrow()

      const ci = await httpClient(proxy.url, { headers: bearer(CI_BOT) })
      const sid = sessionIdOf(ci)
      // A tool call on a live session, with a wrong token or none: 401 all the same.
      for (const headers of [{}, bearer(randomBytes(24).toString('hex'))]) {
        const r = await rawRequest(proxy.url, { headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }, body: rawCall('mallory') })
        expect(r.status).toBe(401)
      }
      expect(await journaled(cwd)).toEqual([])
      expect(sent(cwd)).toBe(0)

      const ops = await httpClient(proxy.url, { headers: bearer(OPS) })
      expect(resultMeta(await ci.callTool(create('erin')))['interlock/state']).toBe('COMMITTED')
      expect(resultMeta(await ops.callTool(create('frank')))['interlock/state']).toBe('COMMITTED')
      expect(await journaled(cwd)).toHaveLength(2)
      expect(sent(cwd)).toBe(2)
      await ci.close()
      await ops.close()
      expect(proxy.stderr()).toContain('authentication: static bearer tokens (3, principals ci-bot, ops)')
      for (const token of [CI_BOT, CI_BOT_NEXT, OPS]) expect(proxy.stderr()).not.toContain(token)
    } finally {
      await proxy.close()
    }
  })
})

describe('OAuth access tokens', () => {
  let issuer: OAuthIssuer
  beforeAll(async () => {
    issuer = await startOAuthIssuer({ clients: { 'agent-7': 'agent-7-secret' } })
  })
  afterAll(async () => {
    await issuer?.close()
  })

  it('serves its protected resource metadata, and refuses 401 with a challenge pointing there: none, expired, another audience, forged, another issuer', async () => {
    const cwd = scratch(oauthToml(issuer.issuer, 'scopes = ["notes:write"]\n'))
    const proxy = await proxyOverHttp({ cwd })
    const port = new URL(proxy.url).port
    const metadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`
    try {
      const expected = { resource: proxy.url, authorization_servers: [issuer.issuer], scopes_supported: ['notes:write'], bearer_methods_supported: ['header'] }
      for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
        const doc = await rawRequest(`http://127.0.0.1:${port}${path}`, { method: 'GET' })
        expect(doc.status, path).toBe(200)
        expect(JSON.parse(doc.body)).toMatchObject(expected)
      }
      // The resource is the URL the client used, as a client checks.
      const viaLocalhost = await rawRequest(`http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`, { method: 'GET', headers: { host: `localhost:${port}` } })
      expect(JSON.parse(viaLocalhost.body).resource).toBe(`http://localhost:${port}/mcp`)
      // The issuer's keys were found through its metadata (no jwks_uri in the file).
      expect(proxy.stderr()).toContain(`OAuth JWT access tokens (issuer ${issuer.issuer}, keys ${issuer.jwksUri}, audience the resource URL, scopes notes:write)`)

      const none = await rawRequest(proxy.url, { body: INITIALIZE })
      expect(none.status).toBe(401)
      expect(none.headers['www-authenticate']).toBe(`Bearer scope="notes:write", resource_metadata="${metadataUrl}"`)

      const hour = Math.floor(Date.now() / 1000) + 3600
      const bad = {
        expired: await issuer.token({ aud: proxy.url, scope: 'notes:write', iat: hour - 7300, exp: hour - 7200 }),
        'another audience': await issuer.token({ aud: 'https://other-resource.example/mcp', scope: 'notes:write' }),
        'no audience': await issuer.token({ scope: 'notes:write' }),
        forged: await issuer.token({ aud: proxy.url, scope: 'notes:write' }, { forged: true }),
        'another issuer': await issuer.token({ aud: proxy.url, scope: 'notes:write', iss: 'http://127.0.0.1:1' }),
        'not a JWT': 'abc.def.ghi',
      }
      const client = await httpClient(proxy.url, { headers: bearer(await issuer.token({ aud: proxy.url, scope: 'notes:write' })) })
      const sid = sessionIdOf(client)
      for (const [why, token] of Object.entries(bad)) {
        for (const body of [INITIALIZE, rawCall('mallory')]) {
          const r = await rawRequest(proxy.url, { headers: { ...bearer(token), ...(body === INITIALIZE ? {} : { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }) }, body })
          expect(r.status, why).toBe(401)
          expect(r.headers['www-authenticate'], why).toMatch(new RegExp(`^Bearer error="invalid_token", error_description="[^"]+", scope="notes:write", resource_metadata="${metadataUrl.replace(/[.?]/g, '\\$&')}"$`))
          expect(r.headers['mcp-session-id'], why).toBeUndefined()
        }
      }
      expect(await journaled(cwd)).toEqual([])
      expect(sent(cwd)).toBe(0)

      // A token without the required scope: 403 insufficient_scope, naming the scope to ask for.
      const narrow = await rawRequest(proxy.url, { headers: bearer(await issuer.token({ aud: proxy.url, scope: 'notes:read' })), body: INITIALIZE })
      expect(narrow.status).toBe(403)
      expect(narrow.headers['www-authenticate']).toMatch(/^Bearer error="insufficient_scope", error_description="[^"]+", scope="notes:write", resource_metadata="/)

      // Many calls, one fetch of the issuer's keys.
      for (let i = 0; i < 5; i++) expect(resultMeta(await client.callTool(create(`grace-${i}`)))['interlock/state']).toBe('COMMITTED')
      expect(await journaled(cwd)).toHaveLength(5)
      expect(sent(cwd)).toBe(5)
      expect(issuer.hits.get('/jwks')).toBe(1)
      await client.close()
    } finally {
      await proxy.close()
    }
  })

  it("the SDK's Client finds the issuer from the 401 and the metadata, gets a token for this resource, and calls", async () => {
    const cwd = scratch(oauthToml(issuer.issuer, `jwks_uri = ${q(issuer.jwksUri)}\nscopes = ["notes:write"]\n`))
    const proxy = await proxyOverHttp({ cwd })
    try {
      const before = issuer.hits.get('/token') ?? 0
      // A client_credentials client asks for the scope it was configured with (the SDK's fetchToken), not the challenge's.
      const authProvider = new ClientCredentialsProvider({ clientId: 'agent-7', clientSecret: 'agent-7-secret', expectedIssuer: issuer.issuer, scope: 'notes:write' })
      const client = await httpClient(proxy.url, { authProvider })
      expect(issuer.hits.get('/token')).toBe(before + 1)
      const token = authProvider.tokens()!.access_token
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { aud: string; sub: string; scope: string }
      expect(claims).toMatchObject({ aud: proxy.url, sub: 'agent-7', scope: 'notes:write' })
      expect(resultMeta(await client.callTool(create('heidi')))['interlock/state']).toBe('COMMITTED')
      expect(await journaled(cwd)).toHaveLength(1)
      await client.close()
      expect(proxy.stderr()).not.toContain(token)
    } finally {
      await proxy.close()
    }
  })
})

describe('a session belongs to the principal that started it', () => {
  let issuer: OAuthIssuer
  beforeAll(async () => {
    issuer = await startOAuthIssuer()
  })
  afterAll(async () => {
    await issuer?.close()
  })

  it("another principal's credentials on its Mcp-Session-Id: 404, as an unknown session; the same principal's other token goes on", async () => {
    const cwd = scratch(`${TOKENS}${oauthToml(issuer.issuer)}`)
    const proxy = await proxyOverHttp({ cwd, env: ENV })
    try {
      const ci = await httpClient(proxy.url, { headers: bearer(CI_BOT) })
      const sid = sessionIdOf(ci)
      const session = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }
      const others = { 'token:ops': OPS, 'oauth:alice': await issuer.token({ aud: proxy.url }), 'oauth:ci-bot': await issuer.token({ aud: proxy.url, sub: 'ci-bot' }) }
      for (const [who, token] of Object.entries(others)) {
        const r = await rawRequest(proxy.url, { headers: { ...bearer(token), ...session }, body: rawCall('mallory') })
        expect(r.status, who).toBe(404)
        expect(errorOf(r.body), who).toBe('session not found')
        // Nor can it end the session.
        expect((await rawRequest(proxy.url, { method: 'DELETE', headers: { ...bearer(token), ...session } })).status, who).toBe(404)
      }
      expect(await journaled(cwd)).toEqual([])
      expect(sent(cwd)).toBe(0)

      // ci-bot's other token is ci-bot: the session goes on.
      const rotated = await rawRequest(proxy.url, { headers: { ...bearer(CI_BOT_NEXT), ...session }, body: rawCall('ivan') })
      expect(rotated.status, rotated.body).toBe(200)
      expect(rotated.body).toContain('interlock/effect')
      expect(resultMeta(await ci.callTool(create('judy')))['interlock/state']).toBe('COMMITTED')
      expect(await journaled(cwd)).toHaveLength(2)
      expect(sent(cwd)).toBe(2)
      await ci.close()
    } finally {
      await proxy.close()
    }
  })
})
