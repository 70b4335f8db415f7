/**
 * The MCP parts the tests run for real: the reference servers from npm
 * (server-memory, server-filesystem, server-everything), started as child
 * processes over stdio or Streamable HTTP; the built `interlock mcp-proxy`
 * spawned by the SDK's own `Client`; the wire (mcp-pipe.mjs) that
 * records what reached a server and plays its faults; and a server that
 * needs a variable to start (needs-env.mjs).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js'
import { inject } from 'vitest'
import { freePort } from './free-port.js'

const require = createRequire(import.meta.url)
const serverEntry = (pkg: string) => join(dirname(require.resolve(`${pkg}/package.json`)), 'dist', 'index.js')

/** Entry points of the reference servers, run with `node`. */
export const SERVERS = {
  memory: serverEntry('@modelcontextprotocol/server-memory'),
  filesystem: serverEntry('@modelcontextprotocol/server-filesystem'),
  everything: serverEntry('@modelcontextprotocol/server-everything'),
}

/** The recording, fault-playing wire in front of a stdio server. */
export const PIPE = fileURLToPath(new URL('./mcp-pipe.mjs', import.meta.url))

/** A stdio server that starts only with a given variable set (needs-env.mjs): `node NEEDS_ENV <VARIABLE> <entry> [args...]`. */
export const NEEDS_ENV = fileURLToPath(new URL('./needs-env.mjs', import.meta.url))

/** A TOML string literal. */
export const q = (s: string) => JSON.stringify(s)

/** `command` and `args` of a [targets.<name>] that runs `server` (through the wire when `pipe` is given). */
export function stdioServer(entry: string, args: string[] = [], pipe?: { log: string; fault?: string; tools?: string[]; once?: string }): string {
  const argv = pipe ? [PIPE, process.execPath, entry, ...args] : [entry, ...args]
  const env: Record<string, string> = {}
  if (pipe) {
    env.PIPE_LOG = pipe.log
    if (pipe.fault) Object.assign(env, { FAULT: pipe.fault, FAULT_TOOLS: (pipe.tools ?? []).join(','), FAULT_ONCE: pipe.once ?? `${pipe.log}.once` })
  }
  return `command = ${q(process.execPath)}\nargs = [${argv.map(q).join(', ')}]\n${Object.keys(env).length ? `env = { ${Object.entries(env).map(([k, v]) => `${k} = ${q(v)}`).join(', ')} }\n` : ''}`
}

/** Each tools/call that reached the server through the wire: tool, effect id, and the whole `_meta` it came with. */
export function wireLog(file: string): { tool: string; effect: string | null; meta: Record<string, unknown> | null }[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { tool: string; effect: string | null; meta: Record<string, unknown> | null })
}

/** How many calls of one effect reached the server. */
export function reached(file: string, effectId: string): number {
  return wireLog(file).filter((c) => c.effect === effectId).length
}

/** The memory server's ledger: its JSONL file, one entity or relation per line. */
export function memoryLedger(file: string): { type: string; name?: string; observations?: string[]; from?: string; to?: string }[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
}

export interface ProxyClient {
  client: Client
  /** Everything the proxy wrote on stderr so far. */
  stderr(): string
  /** The proxy's pid. */
  pid: number | null
  close(): Promise<void>
  /** Resolves when the proxy process has exited (a crash point, or the end). */
  exited: Promise<void>
}

export interface ProxyClientOptions {
  cwd: string
  args?: string[]
  env?: Record<string, string>
  capabilities?: ClientCapabilities
  /** Set up request handlers (sampling, elicitation, roots) before connecting. */
  prepare?: (client: Client) => void
}

/** The built `interlock mcp-proxy`, started by the SDK's Client over stdio, as an agent host starts it. */
export async function proxyClient(o: ProxyClientOptions): Promise<ProxyClient> {
  const bin = join(inject('cliRoot'), 'bin', 'run.js')
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, 'mcp-proxy', ...(o.args ?? [])],
    cwd: o.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: o.cwd, NO_COLOR: '1', ...o.env },
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  let exit!: () => void
  const exited = new Promise<void>((resolve) => (exit = resolve))
  transport.onclose = () => exit()
  const client = new Client({ name: 'interlock-test-host', version: '1.0.0' }, { capabilities: o.capabilities ?? {} })
  o.prepare?.(client)
  try {
    await client.connect(transport)
  } catch (e) {
    throw new Error(`the proxy did not start: ${(e as Error).message}\n${stderr}`)
  }
  const pid = transport.pid
  // Client.connect replaced onclose; keep telling us when the process is gone.
  const onclose = transport.onclose
  transport.onclose = () => {
    onclose?.()
    exit()
  }
  return { client, stderr: () => stderr, pid, exited, close: () => client.close() }
}

/** An SDK Client straight to a stdio server, no proxy: the baseline. */
export async function directClient(entry: string, args: string[], o: { cwd: string; env?: Record<string, string>; capabilities?: ClientCapabilities; prepare?: (c: Client) => void }): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [entry, ...args], cwd: o.cwd, env: o.env, stderr: 'ignore' })
  const client = new Client({ name: 'interlock-test-host', version: '1.0.0' }, { capabilities: o.capabilities ?? {} })
  o.prepare?.(client)
  await client.connect(transport)
  return client
}

/** An SDK Client over Streamable HTTP (with `authProvider`, it does the OAuth flow itself on a 401). */
export async function httpClient(
  url: string,
  o: { capabilities?: ClientCapabilities; prepare?: (c: Client) => void; headers?: Record<string, string>; authProvider?: OAuthClientProvider } = {},
): Promise<Client> {
  const client = new Client({ name: 'interlock-test-host', version: '1.0.0' }, { capabilities: o.capabilities ?? {} })
  o.prepare?.(client)
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: o.headers ?? {} }, ...(o.authProvider ? { authProvider: o.authProvider } : {}) }))
  return client
}

/** The session id an SDK Client over Streamable HTTP was given. */
export function sessionIdOf(client: Client): string {
  const id = (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId
  if (!id) throw new Error('the client has no Mcp-Session-Id')
  return id
}

export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/**
 * One HTTP request as written, through node:http (fetch would not send a
 * Host of our choosing): for what an SDK Client would never send, such as
 * a rebinding page's Host and Origin, or another caller's session id.
 * Streamed answers (SSE) are read until the first event.
 */
export function rawRequest(url: string, o: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<RawResponse> {
  const body = o.body === undefined ? undefined : JSON.stringify(o.body)
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: o.method ?? 'POST',
        headers: { accept: 'application/json, text/event-stream', ...(body ? { 'content-type': 'application/json' } : {}), ...o.headers },
      },
      (res) => {
        let text = ''
        const done = () => {
          res.destroy()
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text })
        }
        res.setEncoding('utf8').on('data', (d: string) => {
          text += d
          if (String(res.headers['content-type']).startsWith('text/event-stream') && text.includes('\n\n')) done()
        })
        res.once('end', done)
      },
    )
    req.once('error', reject)
    req.end(body)
  })
}

/** A JSON-RPC initialize request, as a client's first. */
export const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }

/** server-everything over Streamable HTTP on a free port: its URL, and a way to stop it. */
export async function everythingOverHttp(): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort()
  const child = spawn(process.execPath, [SERVERS.everything, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
  await waitFor(child, /listening on port/i, 20_000)
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      child.kill('SIGKILL')
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))
    },
  }
}

/** `interlock mcp-proxy --http` (on `bind`, default 127.0.0.1:0) as a child: the URL it serves, its stderr, and a way to stop it. */
export async function proxyOverHttp(o: { cwd: string; args?: string[]; env?: Record<string, string>; bind?: string }): Promise<{ url: string; child: ChildProcess; stderr(): string; close(): Promise<void> }> {
  const bin = join(inject('cliRoot'), 'bin', 'run.js')
  const child = spawn(process.execPath, [bin, 'mcp-proxy', '--http', o.bind ?? '127.0.0.1:0', ...(o.args ?? [])], {
    cwd: o.cwd,
    env: { PATH: process.env.PATH ?? '', HOME: o.cwd, NO_COLOR: '1', ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const line = await waitFor(child, /serving \S+ at (http:\/\/\S+)/, 30_000)
  return {
    url: line[1]!,
    child,
    stderr: () => stderr,
    close: async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))
    },
  }
}

/** Resolves with the first match of `pattern` in what `child` writes (stdout and stderr); rejects if it exits first or takes longer than `timeoutMs`. */
export function waitFor(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let seen = ''
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${seen}`)), timeoutMs)
    const look = (d: Buffer) => {
      seen += d.toString()
      const m = pattern.exec(seen)
      if (m) {
        clearTimeout(timer)
        resolve(m)
      }
    }
    child.stdout?.on('data', look)
    child.stderr?.on('data', look)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`exited ${code} before ${pattern}:\n${seen}`))
    })
  })
}

/** The text of a CallToolResult's text blocks. */
export const resultText = (r: unknown) => (((r as { content?: { type: string; text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('\n'))

/** A CallToolResult's `_meta`. */
export const resultMeta = (r: unknown) => ((r as { _meta?: Record<string, unknown> })._meta ?? {}) as Record<string, unknown>

/**
 * interlock.toml fronting server-memory through the wire (its ledger
 * `memory.jsonl`, the wire's record `wire.log`), in `dir`, with `extra` TOML
 * after the target's table.
 */
export function memoryToml(dir: string, o: { extra?: string; fault?: string; tools?: string[]; store?: string; gate?: string; target?: string } = {}): string {
  const pipe = { log: join(dir, 'wire.log'), fault: o.fault, tools: o.tools }
  const server = stdioServer(SERVERS.memory, [], pipe)
  // The memory server's file rides in the same env table as the wire's settings.
  const withFile = server.includes('env = { ')
    ? server.replace('env = { ', `env = { MEMORY_FILE_PATH = ${q(join(dir, 'memory.jsonl'))}, `)
    : `${server}env = { MEMORY_FILE_PATH = ${q(join(dir, 'memory.jsonl'))} }\n`
  return `${o.store ?? '[store]\npath = "journal.db"\n'}[gate]\n${o.gate ?? 'max_attempts = 2\nbackoff_ms = 10\n'}[targets.memory]\ntype = "mcp"\n${o.target ?? ''}${withFile}${o.extra ?? ''}`
}
