/**
 * bench/mcp/http-auth: what authentication costs a tool call through
 * `interlock mcp-proxy --http`, against the same call with authentication
 * off, in one run.
 *
 * Three built proxies on 127.0.0.1, each in front of its own
 * @modelcontextprotocol/server-filesystem over stdio, each called by the
 * SDK's Client over Streamable HTTP with read_text_file of a small file (a
 * read tool: forwarded, not journaled, so the call is the hop and little
 * else, and authentication's share is as large as it gets):
 *
 *   off     --insecure-no-auth, twice: two identical proxies show how
 *           much two processes differ on this machine (the noise floor)
 *   bearer  a static token ([[targets.fs.proxy_http.tokens]])
 *   oauth   a JWT access token (ES256) from a local issuer
 *           (test/helpers/oauth-issuer.ts), verified once, then cached
 *
 * in alternating slices so the machine's other load falls on all alike;
 * and, in this process, what authentication itself costs: a static
 * token's check (HttpAuth.authenticate), an OAuth token's when it hits the
 * cache, and what the cache saves: jose's jwtVerify (signature and claims)
 * for every call.
 *
 * Goal (issue 21): bearer and oauth p50 within 1.1 × off.
 *
 *   npm run build && npx tsx bench/mcp/http-auth.ts [--seconds 10]
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { HttpAuth, resourceOf } from '../../src/integrations/mcp/http-auth.js'
import { OAuthTokens } from '../../src/integrations/mcp/oauth-tokens.js'
import { StaticTokens } from '../../src/integrations/mcp/static-tokens.js'
import { startOAuthIssuer } from '../../test/helpers/oauth-issuer.js'

const args = process.argv.slice(2)
const seconds = Number(args[args.indexOf('--seconds') + 1] || 0) || 10
const SLICES = 10
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const require = createRequire(import.meta.url)
const filesystem = join(dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist', 'index.js')

interface Proxy {
  url: string
  child: ChildProcess
}

async function startProxy(dir: string, files: string, access: string, argv: string[], env: Record<string, string>): Promise<Proxy> {
  mkdirSync(dir)
  writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n[targets.fs]\ntype = "mcp"\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(filesystem)}, ${JSON.stringify(files)}]\n${access}`)
  const child = spawn(process.execPath, [join(repo, 'bin', 'run.js'), 'mcp-proxy', '--http', '127.0.0.1:0', ...argv], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
  let seen = ''
  const url = await new Promise<string>((ok, fail) => {
    child.stderr!.on('data', (d: Buffer) => {
      seen += d.toString()
      const m = /serving \S+ at (http:\/\/\S+)/.exec(seen)
      if (m) ok(m[1]!)
    })
    child.once('exit', (code) => fail(new Error(`the proxy exited ${code}:\n${seen}`)))
  })
  return { url, child }
}

async function connect(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'bench-mcp-auth', version: '1' }, { capabilities: {} })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} } }))
  return client
}

interface Series {
  label: string
  call: () => Promise<unknown>
  ms: number[]
  time: number
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

function stats(s: Series): { p50: number; p95: number; p99: number; rate: number } {
  const sorted = [...s.ms].sort((a, b) => a - b)
  return { p50: quantile(sorted, 0.5), p95: quantile(sorted, 0.95), p99: quantile(sorted, 0.99), rate: s.ms.length / (s.time / 1000) }
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'interlock-bench-mcp-auth-'))
  const files = join(root, 'files')
  mkdirSync(files)
  writeFileSync(join(files, 'small.txt'), 'a line of text\n'.repeat(20))
  const issuer = await startOAuthIssuer()
  const staticToken = randomBytes(32).toString('hex')
  const proxies: Proxy[] = []
  const clients: Client[] = []
  try {
    proxies.push(await startProxy(join(root, 'off'), files, '', ['--insecure-no-auth'], {}))
    proxies.push(await startProxy(join(root, 'off-2'), files, '', ['--insecure-no-auth'], {}))
    proxies.push(await startProxy(join(root, 'bearer'), files, '[[targets.fs.proxy_http.tokens]]\nprincipal = "bench"\ntoken = "${BENCH_TOKEN}"\n', [], { BENCH_TOKEN: staticToken }))
    proxies.push(await startProxy(join(root, 'oauth'), files, `[targets.fs.proxy_http.oauth]\nissuer = ${JSON.stringify(issuer.issuer)}\njwks_uri = ${JSON.stringify(issuer.jwksUri)}\n`, [], {}))
    const [off, off2, bearer, oauth] = proxies as [Proxy, Proxy, Proxy, Proxy]
    const jwt = await issuer.token({ aud: oauth.url, exp: Math.floor(Date.now() / 1000) + 24 * 3600 })
    clients.push(await connect(off.url), await connect(off2.url), await connect(bearer.url, staticToken), await connect(oauth.url, jwt))
    const [cOff, cOff2, cBearer, cOauth] = clients as [Client, Client, Client, Client]
    const read = { name: 'read_text_file', arguments: { path: join(files, 'small.txt') } }

    // In this process: a verify that hits the cache, against jose's full check each time.
    const verifier = new OAuthTokens({ issuer: issuer.issuer, scopes: [] }, issuer.jwksUri)
    const tokens = new HttpAuth(new StaticTokens([{ principal: 'bench', token: staticToken }, { principal: 'other', token: randomBytes(32).toString('hex') }]), undefined)
    const resource = resourceOf(bearer.url)
    const jwks = createRemoteJWKSet(new URL(issuer.jwksUri))
    const check = (ok: boolean) => {
      if (!ok) throw new Error('the token did not verify')
    }
    const series: Series[] = [
      { label: 'tools/call, auth off', call: () => cOff.callTool(read), ms: [], time: 0 },
      { label: 'tools/call, auth off (2nd proxy)', call: () => cOff2.callTool(read), ms: [], time: 0 },
      { label: 'tools/call, static bearer token', call: () => cBearer.callTool(read), ms: [], time: 0 },
      { label: 'tools/call, OAuth JWT (cached)', call: () => cOauth.callTool(read), ms: [], time: 0 },
      { label: 'static token check (in process)', call: async () => check((await tokens.authenticate(`Bearer ${staticToken}`, resource)).ok), ms: [], time: 0 },
      { label: 'OAuth verify, cache hit (in process)', call: async () => check((await verifier.verify(jwt, oauth.url)).ok), ms: [], time: 0 },
      { label: 'jwtVerify each time (in process)', call: async () => check((await jwtVerify(jwt, jwks, { issuer: issuer.issuer, audience: oauth.url })).payload.sub === 'alice'), ms: [], time: 0 },
    ]
    for (const s of series) for (let i = 0; i < 200; i++) await s.call()
    console.log(`bench/mcp/http-auth: ${seconds}s per series in ${SLICES} alternating slices, server-filesystem behind mcp-proxy --http on 127.0.0.1`)
    for (let slice = 0; slice < SLICES; slice++) {
      for (const s of series) {
        const start = performance.now()
        const end = start + (seconds * 1000) / SLICES
        while (performance.now() < end) {
          const t = performance.now()
          const r = (await s.call()) as { isError?: boolean; content?: { text?: string }[] } | undefined
          if (r?.isError) throw new Error(`${s.label}: ${r.content?.[0]?.text}`)
          s.ms.push(performance.now() - t)
        }
        s.time += performance.now() - start
      }
    }
    console.log(`${'series'.padEnd(38)} ${'p50 ms'.padStart(9)} ${'p95 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'calls/s'.padStart(9)}`)
    const st = series.map(stats)
    series.forEach((s, i) => {
      const x = st[i]!
      console.log(`${s.label.padEnd(38)} ${x.p50.toFixed(3).padStart(9)} ${x.p95.toFixed(3).padStart(9)} ${x.p99.toFixed(3).padStart(9)} ${x.rate.toFixed(0).padStart(9)}`)
    })
    const [a, a2, b, c, , hit, full] = st
    const ratio = (x: number, y: number) => (x / y).toFixed(2)
    console.log(`off (2nd) ÷ off        p50 ${ratio(a2.p50, a.p50)}  p95 ${ratio(a2.p95, a.p95)}   (${(a2.p50 - a.p50).toFixed(3)} ms at p50: two identical proxies, the noise floor)`)
    console.log(`static bearer ÷ off    p50 ${ratio(b.p50, a.p50)}  p95 ${ratio(b.p95, a.p95)}   (+${(b.p50 - a.p50).toFixed(3)} ms at p50)   goal p50 ≤ 1.1`)
    console.log(`OAuth JWT ÷ off        p50 ${ratio(c.p50, a.p50)}  p95 ${ratio(c.p95, a.p95)}   (+${(c.p50 - a.p50).toFixed(3)} ms at p50)   goal p50 ≤ 1.1`)
    console.log(`what the cache saves   jwtVerify ${full.p50.toFixed(3)} ms vs cache hit ${hit.p50.toFixed(3)} ms at p50 (${ratio(full.p50, hit.p50)}×)`)
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()))
    for (const p of proxies) {
      if (p.child.exitCode === null) p.child.kill('SIGTERM')
      await new Promise((r) => (p.child.exitCode !== null ? r(null) : p.child.once('exit', r)))
    }
    await issuer.close()
    rmSync(root, { recursive: true, force: true })
  }
}

await main()
