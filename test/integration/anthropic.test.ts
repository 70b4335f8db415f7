/**
 * agent-interlock/anthropic with the real Anthropic SDK (1.14): its tool
 * runner and `client.messages.create`, against a scripted model served over
 * HTTP as the Messages API (helpers/anthropic-api.ts), refunding through the
 * Stripe emulator and posting through the Slack emulator. The emulators'
 * ledgers are the truth; the requests the model received show what it was
 * told. Crashes and the example: test/e2e/anthropic-example.test.ts.
 */
import Anthropic from '@anthropic-ai/sdk'
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod'
import type { BetaMessageParam } from '@anthropic-ai/sdk/resources/beta/messages/messages'
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages/messages'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { Interlock } from '../../src/core/index.js'
import { gatedTool, gatedToolResult, heldToolUses, resumeToolUses } from '../../src/integrations/anthropic/index.js'
import { agentWorld, CHANNEL, type AgentWorld } from '../helpers/agent-world.js'
import { resultText, startMessagesApi, text, toolResults, toolUse, userText, type MessagesApi, type Script } from '../helpers/anthropic-api.js'
import { assertCliBuilt } from '../helpers/cli.js'

beforeAll(() => assertCliBuilt())

let world: AgentWorld | undefined
let api: MessagesApi | undefined
afterEach(async () => {
  await api?.close()
  await world?.close()
  api = world = undefined
})

const refundInput = z.object({ charge: z.string(), amount: z.string(), currency: z.string() })

function refundTool(interlock: Interlock, premises?: (args: { charge: string }) => Record<string, never> | undefined) {
  return gatedTool(betaZodTool({ name: 'refund', description: 'Refund a Stripe charge.', inputSchema: refundInput, run: () => 'not called' }), {
    interlock,
    thread: 'conv-1',
    target: 'stripe',
    action: 'refund',
    premises: premises as never,
  })
}

async function setUp(script: Script, holdAbove?: string) {
  world = await agentWorld({ holdAbove })
  api = await startMessagesApi(script)
  const interlock = await world.open()
  const client = new Anthropic({ apiKey: 'test-key', baseURL: api.url, maxRetries: 0 })
  return { world, api, interlock, client }
}

/** Refunds the input on the user's first message, then says what the tool answered. */
const refundOnce =
  (input: Record<string, unknown>): Script =>
  ({ last }) => {
    const [result] = toolResults(last)
    if (!result) return { content: [toolUse('refund', input)] }
    return { content: [text(`${result.is_error ? 'error' : 'ok'}: ${resultText(result)}`)] }
  }

/** The tool_result the model received for the n-th tool call (0-based). */
function received(api: MessagesApi, n = 0): { tool_use_id: string; content: unknown; is_error?: boolean } {
  const all = api.requests.flatMap((r) => toolResults(r.last))
  expect(all.length, JSON.stringify(api.requests)).toBeGreaterThan(n)
  return all[n]!
}

const effectOf = (t: string) => /effect ([0-9a-f]{64})/.exec(t)?.[1]

describe('gatedTool in the tool runner', () => {
  it('refunds once through the stripe target; the model gets the refund as the result, not an error; the effect is named by the tool_use id in the conversation\'s thread', async () => {
    const { world, api, interlock, client } = await setUp(refundOnce({ charge: 'ch_1', amount: '25.00', currency: 'usd' }))
    const final = await client.beta.messages.toolRunner({ model: 'claude-test', max_tokens: 256, messages: [{ role: 'user', content: 'Refund 25 USD of ch_1.' }], tools: [refundTool(interlock)] }).runUntilDone()

    expect(world.stripe.refunds).toMatchObject([{ charge: 'ch_1', amount: 2500 }])
    const result = received(api)
    expect(result.is_error).toBeUndefined()
    expect(resultText(result)).toMatch(/^Done \(effect [0-9a-f]{64}\)\.\nResult: .*"status":"succeeded"/)
    const id = effectOf(resultText(result))!
    const snap = await interlock.store.get(id)
    expect(snap).toMatchObject({ state: 'COMMITTED', effect: { thread: 'anthropic/conv-1', target: 'stripe', action: 'refund', key: `call:${result.tool_use_id}` } })
    expect(world.stripe.refundsFor(id)).toHaveLength(1)
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: expect.stringMatching(/^ok: Done/) })])
  })

  it('the same tool_use answered again is the same effect, not sent again; a second tool_use with the same input is a second refund', async () => {
    const input = { charge: 'ch_1', amount: '10.00', currency: 'usd' }
    // The customer asked for two refunds of 10: the model calls twice, each call its own tool_use id.
    const script: Script = ({ last }) => {
      const [result] = toolResults(last)
      if (!result) return { content: [toolUse('refund', input)] }
      if (api!.requests.filter((r) => toolResults(r.last).length > 0).length === 1) return { content: [toolUse('refund', input)] }
      return { content: [text('Both refunds are done.')] }
    }
    const { world, api: a, interlock, client } = await setUp(script)
    const tools = [refundTool(interlock)]
    const runner = client.beta.messages.toolRunner({ model: 'claude-test', max_tokens: 256, messages: [{ role: 'user', content: 'Refund ch_1 twice, 10 USD each.' }], tools })
    const saved: BetaMessageParam[][] = []
    for await (const reply of runner) saved.push([...runner.params.messages, { role: 'assistant', content: reply.content }])

    const [first, second] = [received(a, 0), received(a, 1)]
    expect(first.tool_use_id).not.toBe(second.tool_use_id)
    expect(effectOf(resultText(first))).not.toBe(effectOf(resultText(second)))
    expect(world.refunds()).toBe(2)

    // The first reply answered again, as a resumed process would after a crash: found in the journal.
    const again = await resumeToolUses(saved[0]!, tools)
    const block = (again.messages.at(-1)!.content as { tool_use_id: string; content: string; is_error?: boolean }[])[0]!
    expect(block).toMatchObject({ tool_use_id: first.tool_use_id })
    expect(block.is_error).toBeUndefined()
    expect(block.content).toContain(`Already done: this call had been made before (effect ${effectOf(resultText(first))})`)
    expect(world.refunds()).toBe(2)
  })

  it('a decision whose premises changed (the charge disputed after the model read it) is rejected: an error the model can act on, nothing refunded', async () => {
    const reads = new Map<string, Record<string, unknown>>()
    const script: Script = ({ last }) => {
      const [result] = toolResults(last)
      if (!result) return { content: [toolUse('look_up_charge', { charge: 'ch_1' })] }
      if (resultText(result).includes('"object":"charge"')) {
        world!.stripe.updateCharge('ch_1', { disputed: true }) // the customer disputes it while the model decides
        return { content: [toolUse('refund', { charge: 'ch_1', amount: '25.00', currency: 'usd' })] }
      }
      return { content: [text(`${result.is_error ? 'error' : 'ok'}: ${resultText(result)}`)] }
    }
    const { world: w, api, interlock, client } = await setUp(script)
    const lookUp = betaZodTool({
      name: 'look_up_charge',
      description: 'Read a Stripe charge.',
      inputSchema: z.object({ charge: z.string() }),
      run: async ({ charge }) => {
        const body = (await (await fetch(`${w.stripe.url}/v1/charges/${charge}`, { headers: { authorization: `Bearer ${w.stripe.apiKey}` } })).json()) as Record<string, unknown>
        reads.set(charge, body)
        return JSON.stringify(body)
      },
    })
    // What the refund rests on is the charge as the model read it (the stripe target's premise shape).
    const premises = ({ charge }: { charge: string }) => {
      const c = reads.get(charge)
      return c && ({ charge: { id: c.id, status: c.status, amount: c.amount, amount_refunded: c.amount_refunded, disputed: c.disputed, currency: c.currency } } as never)
    }
    await client.beta.messages.toolRunner({ model: 'claude-test', max_tokens: 256, messages: [{ role: 'user', content: 'Refund 25 USD of ch_1.' }], tools: [lookUp, refundTool(interlock, premises)] }).runUntilDone()

    const rejected = received(api, 1)
    expect(rejected.is_error).toBe(true)
    expect(resultText(rejected)).toMatch(/^Rejected, nothing was sent: what this call rests on changed since it was read:\n- charge ch_1: disputed changed since the decision \(was false, now true\)/)
    expect(resultText(rejected)).toContain('Read it again and decide anew')
    expect(w.refunds()).toBe(0)
    expect((await w.journal()).map((e) => e.state)).toEqual(['REJECTED'])
  })

  it('a refund a policy rule holds: the model is told who releases it and not to call again; nothing is sent', async () => {
    const { world, api, interlock, client } = await setUp(refundOnce({ charge: 'ch_1', amount: '250.00', currency: 'usd' }), '100')
    await client.beta.messages.toolRunner({ model: 'claude-test', max_tokens: 256, messages: [{ role: 'user', content: 'Refund 250 USD of ch_1.' }], tools: [refundTool(interlock)] }).runUntilDone()
    const held = received(api)
    expect(held.is_error).toBe(true)
    const id = effectOf(resultText(held))!
    expect(resultText(held)).toContain('waits for a release under rule "large-refunds"')
    expect(resultText(held)).toContain(`interlock outbox release ${id}`)
    expect(resultText(held)).toContain('Do not call this tool again for it: that would be a second refund.')
    expect(world.refunds()).toBe(0)
    expect(await world.journal()).toMatchObject([{ effectId: id, state: 'HELD' }])
  })

  it('a run paused on a hold (heldToolUses in the loop), released by an operator through the CLI, resumes with the same tool_use and gets the committed refund', async () => {
    const { world, api, interlock, client } = await setUp(refundOnce({ charge: 'ch_1', amount: '250.00', currency: 'usd' }), '100')
    const tools = [refundTool(interlock)]
    let saved: BetaMessageParam[] = [{ role: 'user', content: 'Refund 250 USD of ch_1.' }]
    const runner = client.beta.messages.toolRunner({ model: 'claude-test', max_tokens: 256, messages: saved, tools })
    const holds = []
    for await (const reply of runner) {
      saved = [...runner.params.messages, { role: 'assistant', content: reply.content }]
      holds.push(...(await heldToolUses(reply, tools)))
      if (holds.length > 0) break
    }
    expect(holds).toHaveLength(1)
    expect(holds[0]!.text).toContain(`interlock outbox release ${holds[0]!.effectId}`)
    expect(api.requests).toHaveLength(1) // the model was not told anything: the run stopped
    expect(world.refunds()).toBe(0)

    // Not released yet: still paused, nothing answered.
    const early = await resumeToolUses(saved, tools)
    expect(early.held.map((h) => h.effectId)).toEqual([holds[0]!.effectId])
    expect(early.messages).toEqual(saved)

    await world.release(holds[0]!.effectId)
    const { messages, held } = await resumeToolUses(saved, tools)
    expect(held).toEqual([])
    const final = await client.beta.messages.toolRunner({ model: 'claude-test', max_tokens: 256, messages, tools }).runUntilDone()
    expect(world.stripe.refundsFor(holds[0]!.effectId)).toHaveLength(1)
    expect(world.refunds()).toBe(1)
    const result = received(api)
    expect(result.tool_use_id).toBe(holds[0]!.toolUse.id)
    expect(resultText(result)).toMatch(`Done (effect ${holds[0]!.effectId})`)
    expect(final.content).toEqual([expect.objectContaining({ text: expect.stringMatching(/^ok: Done/) })])
  })
})

describe('gatedToolResult in a hand-written loop (client.messages.create)', () => {
  it('answers each outcome honestly: COMMITTED as the result; FAILED, in flight, AMBIGUOUS and REFUSED with is_error and what to do', async () => {
    // The model makes five calls in one reply, then reports what it got.
    const script: Script = ({ last }) => {
      if (toolResults(last).length === 0) {
        return {
          content: [
            toolUse('refund', { charge: 'ch_2', amount: '5.00', currency: 'usd' }),
            toolUse('refund', { charge: 'ch_1', amount: '5.00', currency: 'usd' }),
            toolUse('refund', { charge: 'ch_1', amount: '7.00', currency: 'usd' }),
            toolUse('tell_support', { text: 'Refunds sent.' }),
            toolUse('refund', { charge: 'ch_1', amount: 'five', currency: 'usd' }),
          ],
        }
      }
      return { content: [text('reported')] }
    }
    const { world, api, interlock, client } = await setUp(script)
    // ch_2's refund (the first call) meets 503s until the gate's tries are spent; the Slack post is applied and its answer lost.
    world.stripe.fault({ mode: '5xx', status: 503, route: 'POST /v1/refunds', times: 2 })
    world.slack.fault({ mode: 'apply-then-drop', route: 'POST /api/chat.postMessage' })
    const gates = {
      refund: { interlock, thread: 'ticket-9', target: 'stripe', action: 'refund' },
      tell_support: { interlock, thread: 'ticket-9', target: 'slack', action: 'post', args: (i: { text: string }) => ({ channel: CHANNEL, text: i.text }) },
    }
    const tools = [
      { name: 'refund', description: 'Refund a Stripe charge.', input_schema: { type: 'object' as const, properties: { charge: { type: 'string' }, amount: { type: 'string' }, currency: { type: 'string' } } } },
      { name: 'tell_support', description: 'Post to the support channel.', input_schema: { type: 'object' as const, properties: { text: { type: 'string' } } } },
    ]
    const messages: MessageParam[] = [{ role: 'user', content: 'Refund ch_2, ch_1 twice, tell support.' }]
    for (;;) {
      const reply = await client.messages.create({ model: 'claude-test', max_tokens: 256, messages, tools })
      messages.push({ role: 'assistant', content: reply.content })
      if (reply.stop_reason !== 'tool_use') break
      const results = []
      for (const block of reply.content) {
        // In order: the 503s must meet ch_2's refund (the first), not another.
        if (block.type === 'tool_use') results.push(await gatedToolResult(block, gates[block.name as keyof typeof gates] as never))
        // The card's bank declines the third refund (https://docs.stripe.com/refunds#failed-refunds).
        world.stripe.refundStatus = results.length === 2 ? 'failed' : 'succeeded'
      }
      messages.push({ role: 'user', content: results })
    }
    expect(userText(api.requests[0]!.last)).toContain('Refund ch_2')
    const [inFlight, done, failed, ambiguous, refused] = toolResults(api.requests[1]!.last).map((r) => ({ isError: r.is_error === true, text: resultText(r) }))
    expect(done).toMatchObject({ isError: false, text: expect.stringMatching(/^Done \(effect/) })
    expect(failed).toMatchObject({ isError: true, text: expect.stringMatching(/^Failed, nothing was done: stripe refused this call \(effect [0-9a-f]{64}\): .*failed/) })
    expect(inFlight).toMatchObject({ isError: true, text: expect.stringMatching(/^In flight: this call \(effect [0-9a-f]{64}\) is journaled/) })
    expect(inFlight!.text).toContain('do not call this tool again for it: that would be a second refund')
    expect(ambiguous).toMatchObject({ isError: true, text: expect.stringMatching(/^AMBIGUOUS: this call \(tell_support on slack, effect [0-9a-f]{64}\) was sent, and nobody can know whether it took effect/) })
    expect(ambiguous!.text).toContain(`interlock outbox resolve ${effectOf(ambiguous!.text)} --applied`)
    expect(refused).toMatchObject({ isError: true, text: expect.stringMatching(/^Refused, nothing was sent or journaled: .*amount/) })
    // The ledgers: ch_1's refund, the declined one, none for ch_2 yet; the post applied once.
    expect(world.stripe.refunds.map((r) => [r.charge, r.status])).toEqual([['ch_1', 'succeeded'], ['ch_1', 'failed']])
    expect(world.slack.postsFor(effectOf(ambiguous!.text)!)).toHaveLength(1)
    expect((await world.journal()).map((e) => e.state).sort()).toEqual(['AMBIGUOUS', 'COMMITTED', 'DISPATCHED', 'FAILED'].sort())
  })
})
