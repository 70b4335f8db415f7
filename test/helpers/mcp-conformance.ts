/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance),
 * run for real: its reference server (test/fixtures/mcp-conformance), the
 * suite's CLI against a Streamable HTTP URL with its results read back per
 * scenario, and supergateway, which exposes a stdio MCP server (the proxy)
 * as Streamable HTTP so the suite can reach it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from './free-port.js'
import { waitFor } from './mcp.js'
import { until } from './restate-server.js'

const require = createRequire(import.meta.url)
const root = fileURLToPath(new URL('../..', import.meta.url))
const packageDir = (pkg: string) => dirname(require.resolve(`${pkg}/package.json`))

export const CONFORMANCE_VERSION = (JSON.parse(readFileSync(join(packageDir('@modelcontextprotocol/conformance'), 'package.json'), 'utf8')) as { version: string }).version
const SUITE = join(packageDir('@modelcontextprotocol/conformance'), 'dist', 'index.js')
const SUPERGATEWAY = join(packageDir('supergateway'), 'dist', 'index.js')
const REFERENCE_SERVER = join(root, 'test', 'fixtures', 'mcp-conformance', 'everything-server.ts')

export interface Running {
  url: string
  /** What it wrote, for a failure's message. */
  output(): string
  close(): Promise<void>
}

/** Ends `child`: `signal`, then SIGKILL if it is still there after `graceMs`. */
async function stop(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  child.kill(signal)
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/** Keeps the last `max` characters a child wrote. */
function tail(child: ChildProcess, max = 20_000): () => string {
  let out = ''
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-max))
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  return () => out
}

/** The suite's reference server on a free port, its URL on 127.0.0.1 (a host its DNS-rebinding protection accepts). */
export async function referenceServer(env: Record<string, string> = {}): Promise<Running> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', REFERENCE_SERVER], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const output = tail(child)
  try {
    await waitFor(child, /running on http/, 30_000)
  } catch (e) {
    await stop(child, 'SIGKILL', 0)
    throw e
  }
  return { url: `http://127.0.0.1:${port}/mcp`, output, close: () => stop(child, 'SIGTERM', 5_000) }
}

/**
 * supergateway in front of the stdio server `command` (a shell command line):
 * Streamable HTTP at the URL returned, one server process per MCP session
 * (--stateful: requests of the server to the client, such as sampling, reach
 * the session's client; stateless, each POST would get a process of its own
 * and such requests would be refused). Its children run in process groups of
 * their own, which it stops at SIGTERM.
 */
export async function stdioBridge(command: string, o: { cwd: string; env: Record<string, string> }): Promise<Running> {
  const port = await freePort()
  const child = spawn(
    process.execPath,
    [SUPERGATEWAY, '--stdio', command, '--outputTransport', 'streamableHttp', '--stateful', '--port', String(port), '--healthEndpoint', '/healthz', '--logLevel', 'none'],
    { cwd: o.cwd, env: o.env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const output = tail(child)
  let exited = false
  child.once('exit', () => (exited = true))
  const health = `http://127.0.0.1:${port}/healthz`
  try {
    await until(async () => exited || (await fetch(health)).ok, 30_000, () => `supergateway did not answer ${health}:\n${output()}`)
    if (exited) throw new Error(`supergateway exited at start:\n${output()}`)
  } catch (e) {
    await stop(child, 'SIGKILL', 0)
    throw e
  }
  return { url: `http://127.0.0.1:${port}/mcp`, output, close: () => stop(child, 'SIGTERM', 10_000) }
}

/** A shell word: `s` single-quoted. */
export const shellWord = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

export interface ScenarioResult {
  /** Checks with status SUCCESS and FAILURE, as the suite's summary counts them; a scenario passes when none failed. */
  passed: number
  failed: number
  warnings: number
  /** Each failed check: its id and the suite's message. */
  failures: string[]
}

export interface SuiteRun {
  scenarios: Map<string, ScenarioResult>
  code: number | null
  /** The suite's stdout and stderr. */
  output: string
  ms: number
}

/**
 * `conformance server --url <url> --suite all -o <outDir>`. Pass or fail per
 * scenario is the suite's own summary (it also covers a scenario that threw
 * before writing results); each scenario's checks.json
 * (`<outDir>/server-<scenario>-<timestamp>/`) gives the failed checks'
 * messages and the warnings.
 */
export function runSuite(url: string, outDir: string, timeoutMs = 150_000): Promise<SuiteRun> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SUITE, 'server', '--url', url, '--suite', 'all', '-o', outDir], { cwd: root, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the conformance suite did not finish against ${url} within ${timeoutMs} ms:\n${output.slice(-5_000)}`))
    }, timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ scenarios: readResults(output, outDir), code, output, ms: Date.now() - started })
    })
  })
}

interface Check {
  id: string
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO'
  description?: string
  errorMessage?: string
}

function readResults(output: string, outDir: string): Map<string, ScenarioResult> {
  const checks = new Map<string, Check[]>()
  for (const dir of existsSync(outDir) ? readdirSync(outDir) : []) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(dir)
    const file = join(outDir, dir, 'checks.json')
    if (m && existsSync(file)) checks.set(m[1]!, JSON.parse(readFileSync(file, 'utf8')) as Check[])
  }
  const results = new Map<string, ScenarioResult>()
  const summary = output.slice(output.indexOf('=== SUMMARY ==='))
  for (const m of summary.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed$/gmu)) {
    const scenario = m[1]!
    const own = checks.get(scenario)
    const failures = (own ?? []).filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? c.description ?? 'failed'}`)
    const failed = Number(m[3])
    // A scenario that threw wrote no checks.json: the suite printed why ("Failed to run scenario …").
    if (failed > 0 && failures.length === 0) failures.push('failed to run (see the suite\'s output)')
    results.set(scenario, { passed: Number(m[2]), failed, warnings: (own ?? []).filter((c) => c.status === 'WARNING').length, failures })
  }
  return results
}

/** One line per path: scenarios, passed, failed and the failing ones' names. */
export function summaryLine(path: string, run: SuiteRun): string {
  const all = [...run.scenarios]
  const failing = all.filter(([, r]) => r.failed > 0).map(([name]) => name)
  const warned = all.filter(([, r]) => r.warnings > 0).map(([name]) => name)
  return (
    `${path}: ${all.length} scenarios, ${all.length - failing.length} passed, ${failing.length} failed` +
    (failing.length ? ` (${failing.join(', ')})` : '') +
    (warned.length ? `; warnings in ${warned.join(', ')}` : '') +
    ` [${(run.ms / 1000).toFixed(1)} s]`
  )
}

/**
 * Every scenario that passed in `baseline` and did not pass in `run`, with
 * its failed checks; `exempt` names scenarios not compared (each with why).
 */
export function regressions(baseline: SuiteRun, run: SuiteRun, exempt: Record<string, string> = {}): string[] {
  const found: string[] = []
  for (const [scenario, before] of baseline.scenarios) {
    if (before.failed > 0 || scenario in exempt) continue
    const now = run.scenarios.get(scenario)
    if (!now) found.push(`${scenario}: not in the suite's results`)
    else if (now.failed > 0) found.push(`${scenario}: ${now.failures.join('; ')}`)
  }
  return found
}
