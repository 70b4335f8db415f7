/**
 * examples/langgraph/, run as a user runs it: copied into a project of its
 * own that installs the built package by its npm name (and LangGraph beside
 * it), against the Stripe emulator. It refunds once; killed mid-refund and
 * resumed, still once; held by a rule, it pauses, an operator releases it with
 * the CLI, and resumed it refunds once. And `agent-interlock` alone loads no
 * LangGraph or LangChain module: they are the adapter's optional peers.
 */
import { spawn } from 'node:child_process'
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { StripeEmulator } from '../emulators/stripe.js'
import { assertCliBuilt, interlock as cli, type Run } from '../helpers/cli.js'

const repo = resolve(import.meta.dirname, '../..')
const example = join(repo, 'examples', 'langgraph')
let stripe: StripeEmulator
const dirs: string[] = []
beforeAll(async () => {
  assertCliBuilt()
  stripe = await new StripeEmulator().start()
})
afterAll(async () => {
  await stripe?.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** A project with the example, the built package under its npm name, and the example's other dependencies. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-langgraph-example-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  const link = (name: string, to: string) => {
    mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true })
    symlinkSync(to, join(dir, 'node_modules', name), 'dir')
  }
  link('agent-interlock', inject('cliRoot'))
  for (const dep of ['@langchain/core', '@langchain/langgraph', '@langchain/langgraph-checkpoint-sqlite', 'zod']) link(dep, join(repo, 'node_modules', dep))
  for (const file of ['refund-agent.ts', 'interlock.toml']) copyFileSync(join(example, file), join(dir, file))
  return dir
}

const env = () => ({ STRIPE_API_KEY: stripe.apiKey, STRIPE_BASE_URL: stripe.url })

function node(args: string[], cwd: string, extra: Record<string, string> = {}): Promise<Run & { signal: NodeJS.Signals | null }> {
  return new Promise((res, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: { PATH: process.env.PATH ?? '', HOME: cwd, NO_COLOR: '1', ...env(), ...extra }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code, signal) => res({ code, signal, stdout, stderr }))
  })
}

const agent = (cwd: string, args: string[], extra: Record<string, string> = {}) => node(['refund-agent.ts', ...args], cwd, extra)
const refundsOf = (charge: string) => stripe.refunds.filter((r) => r.charge === charge).length

describe('examples/langgraph/refund-agent.ts', () => {
  it('refunds once', async () => {
    const cwd = project()
    stripe.seedCharge({ id: 'ch_exrun', amount: 2000, currency: 'usd' })
    const run = await agent(cwd, ['t-run', 'Refund 5.00 usd of ch_exrun'])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^Refund: Done \(effect [0-9a-f]{64}\)\./)
    expect(refundsOf('ch_exrun')).toBe(1)
  })

  it('killed after Stripe refunded and before anything recorded it, then resumed: refunded once, and told so', async () => {
    const cwd = project()
    stripe.seedCharge({ id: 'ch_excrash', amount: 2000, currency: 'usd' })
    const doomed = await agent(cwd, ['t-crash', 'Refund 5.00 usd of ch_excrash'], { INTERLOCK_CRASH_AT: 'after-apply' })
    expect(doomed.signal, doomed.stderr).toBe('SIGKILL')
    expect(refundsOf('ch_excrash')).toBe(1)
    const resumed = await agent(cwd, ['t-crash', '--resume'])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stdout).toContain('Refund: Already done: this call had been made before')
    expect(refundsOf('ch_excrash')).toBe(1)
  })

  it('a large refund held by a rule: paused, released by an operator with the CLI, resumed: refunded once', async () => {
    const cwd = project()
    stripe.seedCharge({ id: 'ch_exheld', amount: 90000, currency: 'usd' })
    const keygen = await cli(['operator', 'keygen', '--name', 'alice', '--json'], { cwd })
    expect(keygen.code, keygen.stderr).toBe(0)
    const { publicKey } = JSON.parse(keygen.stdout) as { publicKey: string }
    appendFileSync(join(cwd, 'interlock.toml'), `\n[[operators]]\nname = "alice"\npublic_key = "${publicKey}"\n\n[[policy.rules]]\nname = "large-refunds"\ntarget = "stripe"\nwhen = [{ arg = "amount", above = "100" }]\n`)

    const paused = await agent(cwd, ['t-held', 'Refund 500.00 usd of ch_exheld'])
    expect(paused.code, paused.stderr).toBe(0)
    expect(paused.stdout).toMatch(/^Paused\. Held for operators/)
    const id = /interlock outbox release ([0-9a-f]{64})/.exec(paused.stdout)?.[1]
    expect(id, paused.stdout).toBeDefined()
    expect(refundsOf('ch_exheld')).toBe(0)

    const release = await cli(['outbox', 'release', id!, '--yes', '--key', join(cwd, 'alice.operator.key')], { cwd, env: env() })
    expect(release.code, release.stderr).toBe(0)
    const resumed = await agent(cwd, ['t-held', '--resume'])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stdout).toContain(`(effect ${id})`)
    expect(refundsOf('ch_exheld')).toBe(1)
  })
})

describe('the package without its optional peers', () => {
  it('importing agent-interlock (and agent-interlock/agent) loads no LangGraph or LangChain module; agent-interlock/langgraph does', async () => {
    const cwd = project()
    // Records every module Node resolves while the package is imported.
    const probe = (specifier: string) => `
      import { registerHooks } from 'node:module'
      const seen = []
      registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r } })
      await import('${specifier}')
      console.log(JSON.stringify(seen.filter((u) => u.includes('/@langchain/')).length))
    `
    for (const specifier of ['agent-interlock', 'agent-interlock/agent']) {
      const run = await node(['--input-type=module', '-e', probe(specifier)], cwd)
      expect(run.code, run.stderr).toBe(0)
      expect(JSON.parse(run.stdout.trim()), specifier).toBe(0)
    }
    const adapter = await node(['--input-type=module', '-e', probe('agent-interlock/langgraph')], cwd)
    expect(adapter.code, adapter.stderr).toBe(0)
    expect(JSON.parse(adapter.stdout.trim())).toBeGreaterThan(0)
  })
})
