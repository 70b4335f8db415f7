/**
 * The real Restate server from npm (`@restatedev/restate-server`), started
 * for a test in a process group of its own and stopped whole, with its admin
 * API (deployments, SQL over `sys_invocation`) and ingress (send, attach).
 *
 * Its invocation retry policy is shortened (server defaults: 500 ms doubling
 * to 1 min, `restate-server --dump-config`), so the retry of an invocation
 * whose service process died comes within a second of the restart.
 *
 * The gate benchmark starts its Restate peer here too (bench/gate/peers/restate.ts),
 * under strace and with the server's own retry policy.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { freePort } from './free-port.js'

export interface RestateServer {
  ingress: string
  admin: string
  /** Registers (or re-registers) the service endpoint listening at `uri`. */
  register(uri: string): Promise<void>
  /** Starts `service/handler` with an idempotency key; answers the invocation id. */
  send(path: string, body: unknown, idempotencyKey: string): Promise<string>
  /** Waits for the invocation's result: the HTTP status and body the ingress answers. */
  attach(invocationId: string, timeoutMs?: number): Promise<{ status: number; body: string }>
  /** SQL over Restate's introspection tables (`sys_invocation`, `sys_journal`...). */
  query(sql: string): Promise<Record<string, unknown>[]>
  log(): string
  stop(): Promise<void>
}

export interface RestateOptions {
  /** Starts the server's process (default: as is); the benchmark starts it under strace, to slow its flushes. */
  spawn?: (command: string, args: string[], options: SpawnOptions) => ChildProcess
  /** The invocation retry policy: shortened (default) or the server's own. */
  retries?: 'short' | 'server default'
  /** RESTATE_LOG_FILTER (default warn). */
  logFilter?: string
}

function serverBinary(): string {
  const require = createRequire(import.meta.url)
  return join(dirname(require.resolve('@restatedev/restate-server-linux-x64/package.json')), 'bin', 'restate-server')
}

export async function startRestate(options: RestateOptions = {}): Promise<RestateServer> {
  const base = mkdtempSync(join(tmpdir(), 'interlock-restate-'))
  const [ingressPort, adminPort, fabricPort] = [await freePort(), await freePort(), await freePort()]
  const retries = (options.retries ?? 'short') === 'short' ? { RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL: '50ms', RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL: '500ms' } : {}
  const env = {
    ...process.env,
    RESTATE_BASE_DIR: base,
    RESTATE_LISTEN_MODE: 'tcp',
    RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`,
    RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`,
    RESTATE_BIND_ADDRESS: `127.0.0.1:${fabricPort}`,
    RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${fabricPort}/`,
    RESTATE_DISABLE_TELEMETRY: 'true',
    RESTATE_LOG_FILTER: options.logFilter ?? 'warn',
    ...retries,
  }
  // A process group of its own, stopped whole: under strace the server is strace's child, and stopping strace alone would leave it running.
  const server: ChildProcess = (options.spawn ?? spawn)(serverBinary(), ['--no-logo'], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true })
  let log = ''
  server.stderr!.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)))
  const ingress = `http://127.0.0.1:${ingressPort}`
  const admin = `http://127.0.0.1:${adminPort}`

  const stop = async () => {
    const exited = new Promise((r) => server.once('exit', r))
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-server.pid!, signal)
      } catch {
        // Already gone.
      }
    }
    if (server.exitCode === null && server.signalCode === null) {
      group('SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))])
      if (server.exitCode === null && server.signalCode === null) group('SIGKILL')
    }
    rmSync(base, { recursive: true, force: true })
  }

  const json = async (r: Response, what: string) => {
    const text = await r.text()
    if (!r.ok) throw new Error(`${what}: ${r.status} ${text}`)
    return JSON.parse(text) as Record<string, unknown>
  }

  const it: RestateServer = {
    ingress,
    admin,
    async register(uri) {
      await json(
        await fetch(`${admin}/deployments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ uri, force: true }) }),
        `registering ${uri}`,
      )
    },
    async send(path, body, idempotencyKey) {
      const r = await fetch(`${ingress}/${path}/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(body),
      })
      const answer = await json(r, `sending ${path}`)
      return String(answer.invocationId)
    },
    async attach(invocationId, timeoutMs = 60_000) {
      const r = await fetch(`${ingress}/restate/invocation/${invocationId}/attach`, { signal: AbortSignal.timeout(timeoutMs) })
      return { status: r.status, body: await r.text() }
    },
    async query(sql) {
      const answer = await json(
        await fetch(`${admin}/query`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query: sql }) }),
        'query',
      )
      return answer.rows as Record<string, unknown>[]
    },
    log: () => log,
    stop,
  }
  try {
    await until(async () => (await fetch(`${admin}/health`)).ok, 60_000, () => `restate-server did not become healthy:\n${log}`)
    await until(async () => (await fetch(`${ingress}/restate/health`)).ok, 60_000, () => `restate ingress did not become ready:\n${log}`)
    return it
  } catch (e) {
    await stop()
    throw e
  }
}

export async function until(ok: () => Promise<boolean>, ms: number, why: () => string): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    if (await ok().catch(() => false)) return
    if (Date.now() > end) throw new Error(why())
    await new Promise((r) => setTimeout(r, 100))
  }
}
