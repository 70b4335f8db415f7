/**
 * examples/ai-sdk run as a user runs it (`node refund-agent.ts`, the built
 * package under its npm name), its model the scripted one the AI SDK's
 * default provider resolves (fixtures/agents/ai-sdk-model.ts, loaded with
 * --import), against the Stripe and Slack emulators; the tests'
 * interlock.toml points its targets at them. Killed with SIGKILL at
 * Interlock's after-apply crash point (the service has applied the effect,
 * COMMITTED is not written), the next run goes on from the chat the example
 * saved:
 * - after an approval (a held refund released through the CLI), the saved
 *   messages end in the approval response and the call runs again by its
 *   toolCallId;
 * - without one, the model is asked again and mints a new toolCallId: the
 *   call is named by its content, counted in the chat.
 * Either way the ledgers show one refund (tier 1) or one post left AMBIGUOUS
 * (tier 3). The same agent without Interlock
 * (fixtures/agents/ai-sdk-unprotected.ts), killed at the same moment, makes
 * them twice.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { agentExample, type AgentExample, type ExampleRun } from '../helpers/agent-example.js'
import { agentWorld, type AgentWorld } from '../helpers/agent-world.js'
import { assertCliBuilt } from '../helpers/cli.js'

beforeAll(() => assertCliBuilt())

const FIXTURES = join(import.meta.dirname, '../fixtures/agents')
const DEPS = ['ai', 'zod']

let world: AgentWorld | undefined
let example: AgentExample | undefined
afterEach(async () => {
  example?.cleanup()
  await world?.close()
  example = world = undefined
})

async function setUp(o: { holdAbove?: string } = {}) {
  world = await agentWorld(o)
  example = agentExample('ai-sdk', DEPS)
  const log = join(example.dir, 'model.log')
  const env = {
    ...world.env,
    INTERLOCK_CONFIG: join(world.dir, 'interlock.toml'),
    AI_MODEL: 'scripted',
    MODEL_LOG: log,
    STRIPE_BASE_URL: world.stripe.url,
    SLACK_BASE_URL: world.slack.url,
  }
  const run = (file: string, args: string[], extra: Record<string, string>) => example!.run('--import', [join(FIXTURES, 'ai-sdk-model.ts'), file, ...args], { ...env, ...extra })
  const agent = (args: string[], extra: Record<string, string> = {}) => run('refund-agent.ts', args, extra)
  const unprotected = (args: string[], extra: Record<string, string> = {}) => run(join(FIXTURES, 'ai-sdk-unprotected.ts'), args, extra)
  /** The tool calls the model made, in order, across runs. */
  const calls = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { toolCallId: string; toolName: string }) : [])
  return { world, agent, unprotected, calls }
}

const killed = (r: ExampleRun) => expect(r.signal, `${r.stdout}\n${r.stderr}`).toBe('SIGKILL')
const ok = (r: ExampleRun) => expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
const effectOf = (t: string) => /effect ([0-9a-f]{64})/.exec(t)?.[1]

describe('examples/ai-sdk/refund-agent.ts', () => {
  it('typechecks against the built package\'s types', () => {
    example = agentExample('ai-sdk', DEPS)
    expect(example.typecheck()).toBe('')
  })

  it('refunds through the stripe target and tells support through the slack target, each once', async () => {
    const { world, agent } = await setUp()
    const run = await agent(['c-1', 'Refund 25.00 USD of ch_1 and tell support.'])
    ok(run)
    expect(run.stdout).toMatch(/^OK Done \(effect [0-9a-f]{64}\)/)
    expect(world.stripe.refunds).toMatchObject([{ charge: 'ch_1', amount: 2500 }])
    expect(world.slack.messages.size).toBe(1)
    expect((await world.journal()).map((e) => [e.target, e.state, e.thread])).toEqual(
      expect.arrayContaining([
        ['stripe', 'COMMITTED', 'ai-sdk/c-1'],
        ['slack', 'COMMITTED', 'ai-sdk/c-1'],
      ]),
    )
  })

  it('tier 1, no approval: SIGKILLed after Stripe refunded and before COMMITTED; run again, the model asked again mints a new toolCallId, and the call finds its effect: one refund', async () => {
    const { world, agent, calls } = await setUp()
    killed(await agent(['c-2', 'Refund 25.00 USD of ch_1.'], { INTERLOCK_CRASH_AT: 'after-apply' }))
    expect(world.refunds()).toBe(1)
    const [inFlight] = await world.journal()
    expect(inFlight).toMatchObject({ target: 'stripe', state: 'DISPATCHED' })

    const resumed = await agent(['c-2'])
    ok(resumed)
    expect(resumed.stdout).toContain(`OK Already done: this call had been made before (effect ${inFlight!.effectId})`)
    const [before, after] = calls()
    expect(after!.toolName).toBe('refund')
    expect(after!.toolCallId).not.toBe(before!.toolCallId)
    expect(world.refunds()).toBe(1)
    expect(await world.journal()).toMatchObject([{ effectId: inFlight!.effectId, state: 'COMMITTED' }])
  })

  it('tier 1, no approval, without Interlock: the same agent killed at the same moment refunds twice', async () => {
    const { world, unprotected } = await setUp()
    killed(await unprotected(['c-3', 'Refund 25.00 USD of ch_1.'], { DIE_AFTER_EFFECT: '1' }))
    ok(await unprotected(['c-3']))
    expect(world.stripe.refunds.map((r) => [r.charge, r.amount])).toEqual([
      ['ch_1', 2500],
      ['ch_1', 2500],
    ])
  })

  it('tier 1 after an approval: held, the run stops with the release command; still held, it waits; released through the CLI, the run is SIGKILLed after Stripe refunded; run again, the saved approval runs the call by the same toolCallId: one refund', async () => {
    const { world, agent, calls } = await setUp({ holdAbove: '100' })
    const paused = await agent(['c-4', 'Refund 250.00 USD of ch_1.'])
    ok(paused)
    const id = effectOf(paused.stdout)!
    expect(paused.stdout).toContain(`interlock outbox release ${id}`)
    expect(world.refunds()).toBe(0)

    const early = await agent(['c-4'])
    ok(early)
    expect(early.stdout).toContain(`interlock outbox release ${id}`)
    expect(world.refunds()).toBe(0)

    await world.release(id)
    killed(await agent(['c-4'], { INTERLOCK_CRASH_AT: 'after-apply' }))
    expect(world.stripe.refundsFor(id)).toHaveLength(1)
    const saved = JSON.parse(readFileSync(join(example!.dir, 'chats/c-4.json'), 'utf8')) as { role: string; content: { type: string }[] }[]
    expect(saved.at(-1)).toMatchObject({ role: 'tool', content: [{ type: 'tool-approval-response', approved: true }] })

    const resumed = await agent(['c-4'])
    ok(resumed)
    expect(resumed.stdout).toContain(`OK Already done: this call had been made before (effect ${id})`)
    expect(calls().map((c) => c.toolName)).toEqual(['refund'])
    expect(world.stripe.refundsFor(id)).toHaveLength(1)
    expect(world.refunds()).toBe(1)
    expect(await world.journal()).toMatchObject([{ effectId: id, state: 'COMMITTED' }])
  })

  it('tier 1 after an approval, without Interlock: approved, killed after Stripe refunded; run again, the saved approval refunds again', async () => {
    const { world, unprotected } = await setUp()
    const paused = await unprotected(['c-5', 'Refund 250.00 USD of ch_1.'])
    ok(paused)
    expect(paused.stdout).toContain('waiting for approval')
    killed(await unprotected(['c-5'], { DIE_AFTER_EFFECT: '1' }))
    ok(await unprotected(['c-5']))
    expect(world.stripe.refunds.map((r) => [r.charge, r.amount])).toEqual([
      ['ch_1', 25_000],
      ['ch_1', 25_000],
    ])
  })

  it('tier 3: SIGKILLed after Slack posted and before COMMITTED; run again, the post is AMBIGUOUS, posted once, and the model is told an operator must resolve it', async () => {
    const { world, agent } = await setUp()
    killed(await agent(['c-6', 'Tell support: ch_1 was refunded.'], { INTERLOCK_CRASH_AT: 'after-apply' }))
    expect(world.slack.messages.size).toBe(1)

    const resumed = await agent(['c-6'])
    ok(resumed)
    const id = effectOf(resumed.stdout)!
    expect(resumed.stdout).toMatch(/^ERROR AMBIGUOUS: this call \(tell_support on slack, effect [0-9a-f]{64}\) was sent, and nobody can know whether it took effect/)
    expect(resumed.stdout).toContain(`interlock outbox resolve ${id} --applied`)
    expect(world.slack.postsFor(id)).toHaveLength(1)
    expect(world.slack.messages.size).toBe(1)
    expect(await world.journal()).toMatchObject([{ effectId: id, target: 'slack', state: 'AMBIGUOUS' }])
  })

  it('tier 3 without Interlock: the same agent killed at the same moment posts twice', async () => {
    const { world, unprotected } = await setUp()
    killed(await unprotected(['c-7', 'Tell support: ch_1 was refunded.'], { DIE_AFTER_EFFECT: '1' }))
    ok(await unprotected(['c-7']))
    expect([...world.slack.messages.values()].map((m) => m.text)).toEqual(['ch_1 was refunded.', 'ch_1 was refunded.'])
  })
})
