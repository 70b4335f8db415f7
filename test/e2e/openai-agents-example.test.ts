/**
 * examples/openai-agents run as a user runs it: its own folder, the built
 * package imported by its npm name, each command a process of its own, the
 * operator at the CLI. The agent process is SIGKILLed after a side effect was
 * applied and before it was recorded, and a new process resumes from what the
 * app saved (the Agents SDK's RunState, or only the run's input). Truth is the
 * Stripe and Slack emulators' ledgers. Each scenario runs twice: with the
 * example's Interlock tools, and with its plain tools (--without-interlock),
 * killed at the same moment (by the emulator, once the effect is applied),
 * to show what the adapter buys.
 */
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest'
import type { EmulatorRequest, EmulatorResponse } from '../emulators/emulator.js'
import { SlackEmulator } from '../emulators/slack.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { assertCliBuilt, interlock } from '../helpers/cli.js'

const repo = join(import.meta.dirname, '../..')
const example = join(repo, 'examples/openai-agents')

/** An emulator that, once armed, kills the agent process right after applying a change and before answering it. */
class StripeKills extends StripeEmulator {
  killOnApply?: () => Promise<void>
  protected override async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    const before = this.refunds.length
    const out = await super.route(req)
    if (this.refunds.length > before && this.killOnApply) {
      const kill = this.killOnApply
      this.killOnApply = undefined
      await kill()
    }
    return out
  }
}

class SlackKills extends SlackEmulator {
  killOnApply?: () => Promise<void>
  protected override async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    const before = this.messages.size
    const out = await super.route(req)
    if (this.messages.size > before && this.killOnApply) {
      const kill = this.killOnApply
      this.killOnApply = undefined
      await kill()
    }
    return out
  }
}

let stripe: StripeKills
let slack: SlackKills
const dirs: string[] = []
beforeAll(async () => {
  assertCliBuilt()
  stripe = await new StripeKills().start()
  slack = await new SlackKills().start()
  slack.seedChannel({ id: 'C0REFUNDS', name: 'refunds' })
})
afterAll(async () => {
  await stripe?.close()
  await slack?.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

let seq = 0
let ch = ''
beforeEach(() => {
  ch = `ch_e2e${++seq}${Date.now()}`
  stripe.seedCharge({ id: ch, amount: 50_000, currency: 'usd' })
})

/** The example's folder as a user has it after `npm install`: the package by its npm name, the SDK, zod and tsx. */
async function project(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-example-openai-'))
  dirs.push(dir)
  for (const f of ['package.json', 'refund-agent.ts', 'scripted-model.ts']) cpSync(join(example, f), join(dir, f))
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(inject('cliRoot'), join(dir, 'node_modules', 'agent-interlock'), 'dir')
  for (const dep of ['@openai', 'zod', 'tsx']) symlinkSync(join(repo, 'node_modules', dep), join(dir, 'node_modules', dep), 'dir')
  const key = await interlock(['operator', 'keygen', '--name', 'alice', '--json'], { cwd: dir })
  expect(key.code, key.stderr).toBe(0)
  const publicKey = (JSON.parse(key.stdout) as { publicKey: string }).publicKey
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[targets.stripe]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"

[targets.slack]
type = "slack"
token = "\${SLACK_TOKEN}"
base_url = "${slack.url}"

[[operators]]
name = "alice"
public_key = "${publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "stripe"
when = [{ arg = "amount", above = "100.00" }]
`,
  )
  return dir
}

interface Ended {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

interface Agent {
  pid: number
  kill(): Promise<void>
  ended: Promise<Ended>
}

/** `node --import tsx refund-agent.ts <args>` in the example's folder. */
function agent(dir: string, args: string[], env: Record<string, string> = {}): Agent {
  const child = spawn(process.execPath, ['--import', 'tsx', 'refund-agent.ts', ...args], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      STRIPE_API_KEY: stripe.apiKey,
      SLACK_TOKEN: slack.token,
      STRIPE_BASE_URL: stripe.url,
      SLACK_BASE_URL: slack.url,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const ended = new Promise<Ended>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  return {
    pid: child.pid!,
    ended,
    kill: async () => {
      child.kill('SIGKILL')
      await ended
    },
  }
}

async function ran(dir: string, args: string[], env: Record<string, string> = {}): Promise<Ended> {
  const end = await agent(dir, args, env).ended
  expect(end.code, `${end.stdout}\n${end.stderr}`).toBe(0)
  return end
}

/** Killed by SIGKILL, as the scenario meant: at Interlock's crash point, or by the emulator once it applied the change. */
function expectKilled(end: Ended): void {
  expect(end.signal, `${end.stdout}\n${end.stderr}`).toBe('SIGKILL')
}

async function journal(dir: string): Promise<{ effectId: string; state: string; target: string; thread: string }[]> {
  const list = await interlock(['outbox', 'list', '--json'], { cwd: dir })
  expect(list.code, list.stderr).toBe(0)
  return (JSON.parse(list.stdout) as { effects: { effectId: string; state: string; target: string; thread: string }[] }).effects
}

async function release(dir: string, id: string, ...extra: string[]): Promise<string> {
  const run = await interlock(['outbox', 'release', id, '--yes', '--key', join(dir, 'alice.operator.key'), ...extra], { cwd: dir, env: { STRIPE_API_KEY: stripe.apiKey, SLACK_TOKEN: slack.token } })
  expect(run.code, run.stderr).toBe(0)
  return run.stdout
}

const savedState = (dir: string, thread: string) => (JSON.parse(readFileSync(join(dir, 'runs', `${thread}.json`), 'utf8')) as { state?: string }).state
const refunds = () => stripe.refunds.filter((r) => r.charge === ch)
const posts = (amount: string) => [...slack.messages.values()].filter((m) => m.text === `Refunded ${amount} USD on ${ch}.`)
const ask = (amount: string) => `Refund ${amount} USD on ${ch}, then tell C0REFUNDS`

/** A held refund, released at the CLI: the run's RunState is saved at the interruption. Returns the refund's effect id. */
async function heldAndReleased(dir: string, thread: string): Promise<string> {
  const paused = await ran(dir, ['start', thread, ask('150.00')])
  const [held] = (await journal(dir)).filter((e) => e.state === 'HELD')
  expect(paused.stdout).toContain(`paused: refund is held by Interlock (effect ${held!.effectId})`)
  expect(paused.stdout).toContain(`interlock outbox release ${held!.effectId}`)
  expect(savedState(dir, thread)).toBeTypeOf('string')
  expect(refunds()).toEqual([])
  expect(await release(dir, held!.effectId)).toContain('is AUTHORIZED and goes on to dispatch')
  return held!.effectId
}

/** Without Interlock: the app's own approval pauses the large refund; approved, the run goes on. */
async function approvalPending(dir: string, thread: string): Promise<void> {
  const before = refunds().length
  const paused = await ran(dir, ['start', thread, ask('150.00'), '--without-interlock'])
  expect(paused.stdout).toContain('paused: refund waits for your approval')
  expect(refunds()).toHaveLength(before)
}

describe('examples/openai-agents', () => {
  it('refunds and tells the channel, each once, journaled to the run\'s thread; the model is told each is done', async () => {
    const dir = await project()
    const end = await ran(dir, ['start', 'chat-1', ask('40.00')])
    const effects = await journal(dir)
    expect(effects.map((e) => [e.target, e.state, e.thread]).sort()).toEqual([
      ['slack', 'COMMITTED', 'openai-agents/chat-1'],
      ['stripe', 'COMMITTED', 'openai-agents/chat-1'],
    ])
    expect(refunds()).toHaveLength(1)
    expect(posts('40.00')).toHaveLength(1)
    expect(end.stdout).toMatch(new RegExp(`^refund: Done \\(effect [0-9a-f]{64}\\)\\.\\nResult: .*"refund":"${refunds()[0]!.id}".*\\nnotify: Done`, 's'))
  })

  it('held by the policy: the run pauses and nothing is sent; `interlock outbox release`, then resumed, the refund is made once and the model gets Stripe\'s answer', async () => {
    const dir = await project()
    const id = await heldAndReleased(dir, 'chat-2')
    const end = await ran(dir, ['resume', 'chat-2'])
    expect(end.stdout).toContain(`refund: Already done: this call had been made before (effect ${id})`)
    expect(end.stdout).toContain(`"refund":"${refunds()[0]!.id}"`)
    expect(refunds()).toHaveLength(1)
    expect(stripe.refundsFor(id)).toHaveLength(1)
    expect(posts('150.00')).toHaveLength(1)
  })

  it('denied with `interlock outbox release --deny`: resumed, the model is told who refused and why; nothing is refunded or posted', async () => {
    const dir = await project()
    const paused = await ran(dir, ['start', 'chat-3', ask('150.00')])
    expect(paused.stdout).toContain('paused: refund is held by Interlock')
    const [held] = await journal(dir)
    await release(dir, held!.effectId, '--deny', '--reason', 'store credit instead')
    const end = await ran(dir, ['resume', 'chat-3'])
    expect(end.stdout).toMatch(/^refund: Rejected, nothing was sent: .*store credit instead/s)
    expect(refunds()).toEqual([])
    expect(posts('150.00')).toEqual([])
  })
})

describe('examples/openai-agents killed after a side effect was applied, before it was recorded', () => {
  it('tier 1, resumed from the saved RunState: Stripe refunded once (recovery finds the refund by its effect id); without Interlock, twice', async () => {
    const dir = await project()
    const id = await heldAndReleased(dir, 'chat-4')
    expectKilled(await agent(dir, ['resume', 'chat-4'], { INTERLOCK_CRASH_AT: 'after-apply' }).ended)
    expect(refunds()).toHaveLength(1)
    expect((await journal(dir)).find((e) => e.effectId === id)?.state).toBe('DISPATCHED')
    const end = await ran(dir, ['resume', 'chat-4'])
    expect(end.stdout).toContain(`refund: Already done: this call had been made before (effect ${id})`)
    expect((await journal(dir)).find((e) => e.effectId === id)?.state).toBe('COMMITTED')
    // Recovery found the refund by the effect id it carries (Stripe's metadata) and did not send it again.
    expect(stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/refunds' && r.idempotencyKey === id)).toHaveLength(1)
    expect(refunds()).toHaveLength(1)

    const plainDir = await project()
    await approvalPending(plainDir, 'chat-4')
    const approving = agent(plainDir, ['approve', 'chat-4', '--without-interlock'])
    stripe.killOnApply = approving.kill
    expectKilled(await approving.ended)
    expect(refunds()).toHaveLength(2)
    await ran(plainDir, ['resume', 'chat-4', '--without-interlock'])
    // The app's approval was saved with the RunState: the resumed run refunds again.
    expect(refunds()).toHaveLength(3)
  })

  it('tier 3, resumed from the saved RunState: the Slack post is AMBIGUOUS, posted once, and the model is told an operator must resolve it; without Interlock, posted twice', async () => {
    const dir = await project()
    await heldAndReleased(dir, 'chat-5')
    // The refund's is the first pass of after-apply, the post's the second.
    expectKilled(await agent(dir, ['resume', 'chat-5'], { INTERLOCK_CRASH_AT: 'after-apply@2' }).ended)
    expect(posts('150.00')).toHaveLength(1)
    const end = await ran(dir, ['resume', 'chat-5'])
    const post = (await journal(dir)).find((e) => e.target === 'slack')!
    expect(post.state).toBe('AMBIGUOUS')
    expect(end.stdout).toContain(`notify: AMBIGUOUS: this call (notify on slack, effect ${post.effectId}) was sent, and nobody can know whether it took effect`)
    expect(end.stdout).toContain(`interlock outbox resolve ${post.effectId} --applied`)
    expect(posts('150.00')).toHaveLength(1)
    expect(refunds()).toHaveLength(1)

    const plainDir = await project()
    await approvalPending(plainDir, 'chat-5')
    const approving = agent(plainDir, ['approve', 'chat-5', '--without-interlock'])
    slack.killOnApply = approving.kill
    expectKilled(await approving.ended)
    expect(posts('150.00')).toHaveLength(2)
    await ran(plainDir, ['resume', 'chat-5', '--without-interlock'])
    expect(posts('150.00')).toHaveLength(3)
  })

  it('with no RunState saved yet, run again from its input as the same run: refunded once though the model gave the call a new id; without Interlock, twice', async () => {
    const dir = await project()
    expectKilled(await agent(dir, ['start', 'chat-6', ask('40.00'), '--run', 'request-6'], { INTERLOCK_CRASH_AT: 'after-apply' }).ended)
    expect(savedState(dir, 'chat-6')).toBeUndefined()
    expect(refunds()).toHaveLength(1)
    const end = await ran(dir, ['rerun', 'chat-6'])
    expect(end.stdout).toMatch(/^refund: Already done: this call had been made before/)
    expect(refunds()).toHaveLength(1)
    expect(posts('40.00')).toHaveLength(1)

    const plainDir = await project()
    const starting = agent(plainDir, ['start', 'chat-6', ask('40.00'), '--without-interlock'])
    stripe.killOnApply = starting.kill
    expectKilled(await starting.ended)
    expect(refunds()).toHaveLength(2)
    await ran(plainDir, ['rerun', 'chat-6', '--without-interlock'])
    expect(refunds()).toHaveLength(3)
  })
})

describe('the package', () => {
  /** The modules a fresh Node process loads for one import, by URL. */
  async function loaded(specifier: string): Promise<string[]> {
    const dir = await project()
    const script = `import { registerHooks } from 'node:module'
const seen = []
registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r } })
await import(${JSON.stringify(specifier)})
console.log(JSON.stringify(seen))`
    writeFileSync(join(dir, 'probe.mjs'), script)
    const end = await new Promise<Ended>((resolve) => {
      const child = spawn(process.execPath, ['probe.mjs'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
    })
    expect(end.code, end.stderr).toBe(0)
    return JSON.parse(end.stdout) as string[]
  }

  it('the example typechecks against the built package\'s types', async () => {
    const dir = await project()
    symlinkSync(join(repo, 'node_modules', '@types'), join(dir, 'node_modules', '@types'), 'dir')
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] }, include: ['*.ts'] }),
    )
    const tsc = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' })
    expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0)
  })

  it('`agent-interlock` loads no agent framework; `agent-interlock/openai-agents` loads the Agents SDK', async () => {
    const core = await loaded('agent-interlock')
    expect(core.some((u) => u.includes('/dist/core/index.js'))).toBe(true)
    expect(core.filter((u) => u.includes('@openai/'))).toEqual([])
    const adapter = await loaded('agent-interlock/openai-agents')
    expect(adapter.some((u) => u.includes('/node_modules/@openai/agents/'))).toBe(true)
  })
})
