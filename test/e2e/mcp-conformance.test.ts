/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance,
 * `server --suite all`) against its own reference server
 * (test/fixtures/mcp-conformance), three ways:
 *
 * - directly: the baseline, where the reference server passes everything;
 * - through `interlock mcp-proxy --http`, fronting it as an `mcp` target by
 *   `url` (the reference server speaks Streamable HTTP only);
 * - through `interlock mcp-proxy` over stdio, which the suite reaches through
 *   supergateway (stdio → Streamable HTTP, one proxy process per session).
 *
 * The rule: no scenario that passes directly fails through the proxy. Every
 * tool of the reference server is undeclared and unannotated, so every call
 * goes through the gate at tier 3 and is journaled.
 *
 * Over stdio the HTTP the suite speaks to is supergateway's, not the proxy's:
 * dns-rebinding-protection (Host/Origin validation) tests the bridge there,
 * and is not compared on that path.
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { assertCliBuilt } from '../helpers/cli.js'
import { proxyOverHttp, q } from '../helpers/mcp.js'
import { CONFORMANCE_VERSION, referenceServer, regressions, runSuite, shellWord, stdioBridge, summaryLine, type Running, type SuiteRun } from '../helpers/mcp-conformance.js'
import { environmentHas, listProcesses } from '../helpers/process-census.js'
import { until } from '../helpers/restate-server.js'

const TARGET = 'reference'
/** In the environment of every process this file starts, and of their children: what is still running at the end is found by it. */
const TOKEN = randomUUID()
const TOKEN_VAR = 'MCP_CONFORMANCE_RUN'

/**
 * `interlock mcp-proxy`'s arguments on each path (on the HTTP one, after
 * `--http 127.0.0.1:0`): the one place the proxy's start is configured here,
 * e.g. for an opt-out of --http's authentication on loopback.
 */
function proxyArgs(transport: 'http' | 'stdio'): string[] {
  const common = ['--target', TARGET]
  return transport === 'http' ? [...common, '--insecure-no-auth'] : common
}

/** Not compared on the stdio path: scenario → why. */
const BRIDGE_ONLY: Record<string, string> = {
  'dns-rebinding-protection': "tests the HTTP server's Host/Origin validation, which over stdio is supergateway's",
}

let scratch: string
let reference: Running
let direct: SuiteRun | undefined
const started: Running[] = []

function proxyHome(name: string): string {
  const dir = join(scratch, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n[targets.${TARGET}]\ntype = "mcp"\nurl = ${q(reference.url)}\n`)
  return dir
}

function ours(): string[] {
  return listProcesses()
    .filter((p) => p.state !== 'Z' && environmentHas(p.pid, TOKEN_VAR, TOKEN))
    .map((p) => `${p.pid} ${p.name}`)
}

function report(line: string): void {
  console.log(`[MCP conformance ${CONFORMANCE_VERSION}, --suite all] ${line}`)
}

/** The baseline, then `run`'s comparison to it. */
function compare(run: SuiteRun, exempt: Record<string, string> = {}): string[] {
  if (!direct) throw new Error('no direct run to compare with')
  expect([...run.scenarios.keys()], run.output).toEqual([...direct.scenarios.keys()])
  return regressions(direct, run, exempt)
}

beforeAll(async () => {
  assertCliBuilt()
  scratch = mkdtempSync(join(tmpdir(), 'interlock-mcp-conformance-'))
  reference = await referenceServer({ [TOKEN_VAR]: TOKEN })
  started.push(reference)
})

afterAll(async () => {
  for (const r of started.reverse()) await r.close()
  rmSync(scratch, { recursive: true, force: true })
  // Every process of this file, the proxies supergateway started included, is gone.
  await until(async () => ours().length === 0, 10_000, () => `still running: ${ours().join(', ')}`)
})

describe('the MCP conformance suite', () => {
  it('passes every scenario against its reference server directly', async () => {
    const run = await runSuite(reference.url, join(scratch, 'direct'))
    report(summaryLine('direct', run))
    expect(run.scenarios.size, run.output).toBeGreaterThanOrEqual(30)
    const failing = [...run.scenarios].filter(([, r]) => r.failed > 0).map(([name, r]) => `${name}: ${r.failures.join('; ')}`)
    expect(failing, reference.output()).toEqual([])
    direct = run
  }, 60_000)

  it('fails no scenario through mcp-proxy --http that passes directly', async () => {
    const proxy = await proxyOverHttp({ cwd: proxyHome('http'), args: proxyArgs('http'), env: { [TOKEN_VAR]: TOKEN } })
    started.push({ url: proxy.url, output: proxy.stderr, close: proxy.close })
    const run = await runSuite(proxy.url, join(scratch, 'http-results'))
    report(summaryLine('mcp-proxy --http', run))
    expect(compare(run), proxy.stderr()).toEqual([])
  }, 90_000)

  it('fails no scenario through mcp-proxy over stdio that passes directly', async () => {
    const cwd = proxyHome('stdio')
    const bin = join(inject('cliRoot'), 'bin', 'run.js')
    const command = [process.execPath, bin, 'mcp-proxy', ...proxyArgs('stdio')].map(shellWord).join(' ')
    const bridge = await stdioBridge(command, { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1', [TOKEN_VAR]: TOKEN } })
    started.push(bridge)
    const run = await runSuite(bridge.url, join(scratch, 'stdio-results'))
    report(summaryLine('mcp-proxy over stdio (supergateway)', run))
    for (const [scenario, why] of Object.entries(BRIDGE_ONLY)) report(`  not compared over stdio: ${scenario} (${why})`)
    expect(compare(run, BRIDGE_ONLY), bridge.output()).toEqual([])
  }, 150_000)
})
