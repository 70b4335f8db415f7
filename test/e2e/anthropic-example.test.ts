/**
 * examples/anthropic run as a user runs it (`node refund-agent.ts`, the
 * built package under its npm name), against the scripted Messages API and
 * the Stripe and Slack emulators; the tests' interlock.toml points its
 * targets at them. Killed with SIGKILL at Interlock's after-apply crash
 * point (the service has applied the effect, COMMITTED is not written), the
 * next run resumes from the conversation the example saved, whose last
 * reply holds the tool_use: the ledgers show one refund (tier 1) or one
 * post left AMBIGUOUS (tier 3). The same agent without Interlock
 * (fixtures/agents/anthropic-unprotected.ts), killed at the same moment,
 * makes the refund and the post twice.
 */
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { agentExample, type AgentExample, type ExampleRun } from '../helpers/agent-example.js'
import { agentWorld, type AgentWorld } from '../helpers/agent-world.js'
import { resultText, startMessagesApi, text, toolResults, toolUse, userText, type MessagesApi, type Script } from '../helpers/anthropic-api.js'
import { assertCliBuilt } from '../helpers/cli.js'

beforeAll(() => assertCliBuilt())

const UNPROTECTED = join(import.meta.dirname, '../fixtures/agents/anthropic-unprotected.ts')
const DEPS = ['@anthropic-ai/sdk', 'zod']

let world: AgentWorld | undefined
let api: MessagesApi | undefined
let example: AgentExample | undefined
afterEach(async () => {
  example?.cleanup()
  await api?.close()
  await world?.close()
  example = api = world = undefined
})

/**
 * The support agent's model: "Refund <amount> USD of <charge>" → refund;
 * "tell support" (after the refund, if both) → tell_support; then it says
 * what each tool answered.
 */
function supportModel(): Script {
  const asked = new Map<string, string>() // tool_use id → tool name, across processes
  const call = (name: string, input: Record<string, unknown>) => {
    const block = toolUse(name, input)
    asked.set(block.id as string, name)
    return { content: [block] }
  }
  let request = ''
  return ({ last, messages }) => {
    const results = toolResults(last)
    if (results.length === 0) {
      request = userText(last)
      const refund = /Refund ([\d.]+) USD of (ch_\w+)/.exec(request)
      if (refund) return call('refund', { charge: refund[2], amount: refund[1], currency: 'usd' })
      return call('tell_support', { text: request.replace(/^Tell support: /, '') })
    }
    const [r] = results
    if (asked.get(r!.tool_use_id) === 'refund' && !r!.is_error && /tell support/.test(request || userText(messages[0]!))) return call('tell_support', { text: 'Refunded ch_1.' })
    return { content: [text(`${r!.is_error ? 'ERROR' : 'OK'} ${resultText(r!)}`)] }
  }
}

async function setUp(o: { holdAbove?: string } = {}) {
  world = await agentWorld(o)
  api = await startMessagesApi(supportModel())
  example = agentExample('anthropic', DEPS)
  const env = {
    ...world.env,
    INTERLOCK_CONFIG: join(world.dir, 'interlock.toml'),
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: api.url,
    STRIPE_BASE_URL: world.stripe.url,
    SLACK_BASE_URL: world.slack.url,
  }
  const agent = (args: string[], extra: Record<string, string> = {}) => example!.run('refund-agent.ts', args, { ...env, ...extra })
  const unprotected = (args: string[], extra: Record<string, string> = {}) => example!.run(UNPROTECTED, args, { ...env, ...extra })
  return { world, api, example, agent, unprotected }
}

const killed = (r: ExampleRun) => expect(r.signal, `${r.stdout}\n${r.stderr}`).toBe('SIGKILL')
const ok = (r: ExampleRun) => expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
const effectOf = (t: string) => /effect ([0-9a-f]{64})/.exec(t)?.[1]

/** The tool_use ids the model minted, and the ones tool_results answered, in order. */
function ids(api: MessagesApi) {
  return {
    minted: api.requests.length,
    answered: api.requests.flatMap((r) => toolResults(r.last).map((t) => t.tool_use_id)),
  }
}

describe('examples/anthropic/refund-agent.ts', () => {
  it('typechecks against the built package\'s types', () => {
    example = agentExample('anthropic', DEPS)
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
        ['stripe', 'COMMITTED', 'anthropic/c-1'],
        ['slack', 'COMMITTED', 'anthropic/c-1'],
      ]),
    )
  })

  it('tier 1: SIGKILLed after Stripe refunded and before COMMITTED; run again, it answers the saved tool_use from the journal: one refund', async () => {
    const { world, api, agent } = await setUp()
    killed(await agent(['c-2', 'Refund 25.00 USD of ch_1.'], { INTERLOCK_CRASH_AT: 'after-apply' }))
    expect(world.refunds()).toBe(1)
    const [inFlight] = await world.journal()
    expect(inFlight).toMatchObject({ target: 'stripe', state: 'DISPATCHED' })

    const resumed = await agent(['c-2'])
    ok(resumed)
    expect(resumed.stdout).toContain(`OK Already done: this call had been made before (effect ${inFlight!.effectId})`)
    expect(world.stripe.refundsFor(inFlight!.effectId)).toHaveLength(1)
    expect(world.refunds()).toBe(1)
    expect(await world.journal()).toMatchObject([{ effectId: inFlight!.effectId, state: 'COMMITTED' }])
    // The model was asked once for the refund; its tool_use was answered after the restart, not asked again.
    const { minted, answered } = ids(api)
    expect(minted).toBe(2)
    expect(answered).toHaveLength(1)
    expect(api.requests[0]!.last).toMatchObject({ role: 'user' })
  })

  it('tier 1 without Interlock: the same agent killed at the same moment refunds twice', async () => {
    const { world, unprotected } = await setUp()
    killed(await unprotected(['c-3', 'Refund 25.00 USD of ch_1.'], { DIE_AFTER_EFFECT: '1' }))
    expect(world.refunds()).toBe(1)
    ok(await unprotected(['c-3']))
    expect(world.stripe.refunds.map((r) => [r.charge, r.amount])).toEqual([
      ['ch_1', 2500],
      ['ch_1', 2500],
    ])
  })

  it('tier 3: SIGKILLed after Slack posted and before COMMITTED; run again, the post is AMBIGUOUS, posted once, and the model is told an operator must resolve it', async () => {
    const { world, agent } = await setUp()
    killed(await agent(['c-4', 'Tell support: ch_1 was refunded.'], { INTERLOCK_CRASH_AT: 'after-apply' }))
    expect(world.slack.messages.size).toBe(1)

    const resumed = await agent(['c-4'])
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
    killed(await unprotected(['c-5', 'Tell support: ch_1 was refunded.'], { DIE_AFTER_EFFECT: '1' }))
    ok(await unprotected(['c-5']))
    expect([...world.slack.messages.values()].map((m) => m.text)).toEqual(['ch_1 was refunded.', 'ch_1 was refunded.'])
  })

  it('held: the run stops with the release command and sends nothing; run again before the release, still held; released through the CLI, run again: refunded once, and the model gets the refund', async () => {
    const { world, api, agent } = await setUp({ holdAbove: '100' })
    const paused = await agent(['c-6', 'Refund 250.00 USD of ch_1.'])
    ok(paused)
    const id = effectOf(paused.stdout)!
    expect(paused.stdout).toContain(`interlock outbox release ${id}`)
    expect(world.refunds()).toBe(0)
    expect(api.requests).toHaveLength(1)

    const early = await agent(['c-6'])
    ok(early)
    expect(early.stdout).toContain(`interlock outbox release ${id}`)
    expect(api.requests).toHaveLength(1)

    await world.release(id)
    const resumed = await agent(['c-6'])
    ok(resumed)
    expect(resumed.stdout).toMatch(`OK Done (effect ${id})`)
    expect(world.stripe.refundsFor(id)).toMatchObject([{ charge: 'ch_1', amount: 25_000 }])
    expect(world.refunds()).toBe(1)
  })
})
