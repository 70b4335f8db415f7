/**
 * `interlock mcp-proxy` and `interlock check` leave no process behind. The
 * upstream is started through a launcher, as `npx`/`npm exec` start servers:
 * a shell whose child is the real server (server-everything, which keeps
 * running when its stdin closes). Every process of it carries a token in its
 * environment, so the process table tells whether any of it is still alive
 * after each way the proxy ends: its client closing stdin, SIGTERM, SIGINT,
 * a start whose initialize is never answered, check's probe, the server
 * dying under the proxy, and SIGTERM of --http with a request to a client
 * still unanswered.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt, interlock } from '../helpers/cli.js'
import { httpClient, proxyOverHttp, q, SERVERS } from '../helpers/mcp.js'
import { environmentHas, listProcesses, type ProcessEntry } from '../helpers/process-census.js'

beforeAll(() => assertCliBuilt())

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A scratch folder whose interlock.toml fronts `server` (a shell command line) through /bin/sh, every process of it marked by `token`. */
function fronting(server: string, token: string, extra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-mcp-procs-'))
  dirs.push(dir)
  // `; exit $?` keeps the shell as the server's parent: the launcher and the server are two processes.
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]\npath = "journal.db"\n[targets.everything]\ntype = "mcp"\ncommand = "/bin/sh"\nargs = ["-c", ${q(`${server}; exit $?`)}]\nenv = { UPSTREAM_TOKEN = ${q(token)} }\n${extra}`,
  )
  return dir
}

const everything = `${q(process.execPath)} ${q(SERVERS.everything)} stdio`.replaceAll('"', "'")

function upstream(token: string): ProcessEntry[] {
  return listProcesses().filter((p) => p.state !== 'Z' && environmentHas(p.pid, 'UPSTREAM_TOKEN', token))
}

async function until(ok: () => boolean, ms: number, what: () => string): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what()}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The upstream's whole tree is gone (the design's bound is 2 s; a loaded runner gets more). */
async function upstreamGone(token: string): Promise<void> {
  await until(() => upstream(token).length === 0, 8_000, () => `still running: ${upstream(token).map((p) => `${p.pid} ${p.name}`).join(', ')}`)
}

interface StdioProxy {
  child: ChildProcess
  stderr(): string
  /** Sends one JSON-RPC message and, for a request, waits for its answer. */
  rpc(message: Record<string, unknown>): Promise<Record<string, unknown> | undefined>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** The built proxy on plain pipes, as a host that just closes the pipe when it is done. */
function stdioProxy(cwd: string): StdioProxy {
  const bin = join(inject('cliRoot'), 'bin', 'run.js')
  const child = spawn(process.execPath, [bin, 'mcp-proxy'], { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1' }, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  let out = ''
  const waiting = new Map<unknown, (m: Record<string, unknown>) => void>()
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d
    for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
      const m = JSON.parse(out.slice(0, nl)) as Record<string, unknown>
      out = out.slice(nl + 1)
      waiting.get(m.id)?.(m)
    }
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })))
  return {
    child,
    stderr: () => stderr,
    exited,
    rpc(message) {
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`)
      if (!('id' in message)) return Promise.resolve(undefined)
      return new Promise((resolve, reject) => {
        waiting.set(message.id, resolve)
        void exited.then(() => reject(new Error(`the proxy exited before answering ${String(message.method)}:\n${stderr}`)))
      })
    },
  }
}

async function initialized(proxy: StdioProxy): Promise<void> {
  const init = await proxy.rpc({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe-host', version: '1' } } })
  expect(init).toHaveProperty('result.serverInfo')
  await proxy.rpc({ method: 'notifications/initialized' })
  const tools = await proxy.rpc({ id: 2, method: 'tools/list' })
  expect((tools as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(0)
}

describe('the stdio proxy ends, and its server with it', () => {
  it('when its client closes stdin', async () => {
    const token = randomUUID()
    const proxy = stdioProxy(fronting(everything, token))
    await initialized(proxy)
    expect(upstream(token).length).toBeGreaterThanOrEqual(2) // the shell and the server
    proxy.child.stdin!.end()
    expect(await proxy.exited, proxy.stderr()).toEqual({ code: 0, signal: null })
    await upstreamGone(token)
  })

  it.each(['SIGTERM', 'SIGINT'] as const)('on %s', async (signal) => {
    const token = randomUUID()
    const proxy = stdioProxy(fronting(everything, token))
    await initialized(proxy)
    proxy.child.kill(signal)
    expect(await proxy.exited, proxy.stderr()).toEqual({ code: 0, signal: null })
    await upstreamGone(token)
  })

  it('when its server dies under it: what the launcher left is stopped, and the next request starts the server again', async () => {
    const token = randomUUID()
    const proxy = stdioProxy(fronting(everything, token))
    try {
      await initialized(proxy)
      // The proxy's own session (its tool list, recovery at start) ends once it serves through its client's.
      const shells = () => upstream(token).filter((p) => p.name === 'sh')
      await until(() => shells().length === 1, 8_000, () => `launchers: ${JSON.stringify(shells())}`)
      const first = upstream(token)
      const shell = shells()[0]!
      process.kill(shell.pid, 'SIGKILL')
      await until(() => upstream(token).every((p) => !first.some((f) => f.pid === p.pid)), 8_000, () => `left: ${upstream(token).map((p) => `${p.pid} ${p.name}`).join(', ')}`)
      await until(() => proxy.stderr().includes('closed the session; opened again at the next request'), 8_000, () => `the proxy did not see its server go:\n${proxy.stderr()}`)
      const again = await proxy.rpc({ id: 3, method: 'tools/list' })
      expect(again, JSON.stringify(again)).toHaveProperty('result.tools')
      expect((again as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(0)
      expect(upstream(token).length).toBeGreaterThanOrEqual(2)
    } finally {
      proxy.child.stdin!.end()
      await proxy.exited
    }
    await upstreamGone(token)
  })

  it('when its server never answers initialize: exit 3, naming the wait, nothing left running', async () => {
    const token = randomUUID()
    const cwd = fronting('sleep 300', token, 'connect_timeout_ms = 1500\n')
    const run = await interlock(['mcp-proxy'], { cwd })
    expect(run.code, run.stderr).toBe(3)
    expect(run.stderr).toContain('no answer to initialize within 1500 ms')
    await upstreamGone(token)
  })
})

describe("interlock check's probe leaves nothing running", () => {
  it('of a server that answers', async () => {
    const token = randomUUID()
    const run = await interlock(['check', '--only', 'targets', '--json', '--timeout', '60000'], { cwd: fronting(everything, token) })
    expect(run.code, run.stdout + run.stderr).toBe(0)
    await upstreamGone(token)
  })

  it('of a server that never answers', async () => {
    const token = randomUUID()
    const run = await interlock(['check', '--only', 'targets', '--json'], { cwd: fronting('sleep 300', token, 'connect_timeout_ms = 1500\n') })
    expect(run.code).not.toBe(0)
    expect(run.stdout).toContain('no answer to initialize within 1500 ms')
    await upstreamGone(token)
  })
})

describe('the --http proxy', () => {
  it('ends at SIGTERM at once, though a request of the server to its client is still unanswered, and its servers with it', async () => {
    const token = randomUUID()
    const proxy = await proxyOverHttp({ cwd: fronting(everything, token), args: ['--insecure-no-auth'] })
    let asked!: () => void
    const samplingAsked = new Promise<void>((r) => (asked = r))
    const client = await httpClient(proxy.url, {
      capabilities: { sampling: {} },
      // A host that never answers: gone, or stuck.
      prepare: (c) => c.setRequestHandler(CreateMessageRequestSchema, () => (asked(), new Promise(() => {}))),
    })
    try {
      // The tool asks its client for a sampling during the call: the call waits on an answer that never comes.
      const call = client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello' } }).catch((e: Error) => e)
      await samplingAsked
      const started = Date.now()
      proxy.child.kill('SIGTERM')
      const code = await new Promise<number | null>((r) => (proxy.child.exitCode !== null ? r(proxy.child.exitCode) : proxy.child.once('exit', (c) => r(c))))
      expect(code, proxy.stderr()).toBe(0)
      // Not the 60 s of the unanswered request's timeout.
      expect(Date.now() - started).toBeLessThan(15_000)
      await upstreamGone(token)
      // The client's call never got its answer; closing the client ends it.
      await client.close()
      expect(await call).toBeInstanceOf(Error)
    } finally {
      await client.close().catch(() => {})
      await proxy.close()
    }
  })
})
