/**
 * Roots, and what the server asks of a client that cannot be asked.
 *
 * The proxy's own session with the server (its tool list at start, recovery)
 * has no roots to give, so it declares none, and server-filesystem keeps the
 * folders it was started with instead of logging "Failed to request initial
 * roots" at every start. A client's session declares roots when the client
 * does, and the server gets that client's. Over Streamable HTTP a client
 * without a GET stream cannot be sent the server's requests: the server's
 * roots/list is refused at once (its own log says so) instead of waiting out
 * its timeout (60 s).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'
import { httpClient, proxyClient, proxyOverHttp, SERVERS, stdioServer } from '../helpers/mcp.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A folder with interlock.toml fronting server-filesystem over its `files` subfolder. */
function filesConfig(): { dir: string; files: string } {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-roots-'))
  dirs.push(dir)
  const files = join(dir, 'files')
  mkdirSync(files)
  writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n[targets.fs]\ntype = "mcp"\n${stdioServer(SERVERS.filesystem, [files])}`)
  return { dir, files }
}

const count = (text: string, part: string) => text.split(part).length - 1

/** Resolves once `stderr()` holds `part` `times` times; fails with what it holds after `ms`. */
async function seen(stderr: () => string, part: string, times = 1, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (count(stderr(), part) < times) {
    if (Date.now() > end) throw new Error(`"${part}" not seen ${times} time(s) within ${ms} ms:\n${stderr()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const NO_ROOTS = 'Client does not support MCP Roots'
const FAILED = 'Failed to request initial roots'

describe('roots', () => {
  it('the proxy\'s own session declares none: server-filesystem keeps its folders, and logs no failure', async () => {
    const { dir } = filesConfig()
    const proxy = await proxyClient({ cwd: dir })
    try {
      expect((await proxy.client.listTools()).tools.length).toBeGreaterThan(0)
      // Two sessions with the server: the proxy's own at start, and this client's (which has no roots either).
      await seen(proxy.stderr, NO_ROOTS, 2)
      expect(proxy.stderr()).not.toContain(FAILED)
    } finally {
      await proxy.close()
    }
  })

  it('a client that has roots: its session with the server declares them, and the server gets the client\'s', async () => {
    const { dir, files } = filesConfig()
    const asked: string[] = []
    const proxy = await proxyClient({
      cwd: dir,
      capabilities: { roots: { listChanged: true } },
      prepare: (client) =>
        client.setRequestHandler(ListRootsRequestSchema, async () => {
          asked.push('roots')
          return { roots: [{ uri: pathToFileURL(files).href, name: 'files' }] }
        }),
    })
    try {
      await seen(proxy.stderr, 'Updated allowed directories from MCP roots: 1 valid directories')
      expect(asked).toEqual(['roots'])
      // The proxy's own session, at start, declared none.
      expect(count(proxy.stderr(), NO_ROOTS)).toBe(1)
      expect(proxy.stderr()).not.toContain(FAILED)
    } finally {
      await proxy.close()
    }
  })
})

describe('Streamable HTTP', () => {
  it('a client that opens its GET stream once initialized gets the server\'s roots/list on it', async () => {
    const { dir, files } = filesConfig()
    const proxy = await proxyOverHttp({ cwd: dir, args: ['--insecure-no-auth'] })
    try {
      const client = await httpClient(proxy.url, {
        capabilities: { roots: {} },
        prepare: (c) => c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: pathToFileURL(files).href }] })),
      })
      try {
        await seen(proxy.stderr, 'Updated allowed directories from MCP roots: 1 valid directories')
        expect(proxy.stderr()).not.toContain(FAILED)
      } finally {
        await client.close()
      }
    } finally {
      await proxy.close()
    }
  })


  it('a client with no GET stream: the server\'s roots/list is refused at once, not left to its 60 s timeout', async () => {
    const { dir } = filesConfig()
    const proxy = await proxyOverHttp({ cwd: dir, args: ['--insecure-no-auth'] })
    try {
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
      const init = await fetch(proxy.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { roots: {} }, clientInfo: { name: 'bare-http-client', version: '1' } } }),
      })
      expect(init.status).toBe(200)
      const session = init.headers.get('mcp-session-id')!
      expect(await init.text()).toContain('"serverInfo"')
      const started = Date.now()
      // Initialized, and no GET stream ever opened: the server's roots/list has nowhere to go.
      const initialized = await fetch(proxy.url, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      })
      expect(initialized.status).toBe(202)
      await seen(proxy.stderr, `${FAILED} from client: MCP error -32603: the client cannot be sent roots/list now: it has no stream open`)
      expect(Date.now() - started).toBeLessThan(15_000)
      expect(proxy.stderr()).toContain('no GET stream')
      await fetch(proxy.url, { method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } })
    } finally {
      await proxy.close()
    }
  })
})
