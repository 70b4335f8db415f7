/**
 * agent-interlock/ai-sdk with the real AI SDK (7.0): generateText with
 * tools, multi-step, and its call-level tool approval, driven by a scripted
 * MockLanguageModelV4 (helpers/ai-sdk-model.ts), refunding through the
 * Stripe emulator and posting through the Slack emulator. The emulators'
 * ledgers are the truth; the prompts the model received show what it was
 * told. Crashes and the example: test/e2e/ai-sdk-example.test.ts.
 */
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { Interlock } from '../../src/core/index.js'
import { gatedTool, interlockApproval, resumeApprovals, type GatedOutput } from '../../src/integrations/ai-sdk/index.js'
import { agentWorld, CHANNEL, type AgentWorld } from '../helpers/agent-world.js'
import { allResults, call, lastResults, say, scriptedModel, type Script } from '../helpers/ai-sdk-model.js'
import { assertCliBuilt } from '../helpers/cli.js'

beforeAll(() => assertCliBuilt())

let world: AgentWorld | undefined
afterEach(async () => {
  await world?.close()
  world = undefined
})

const refundInput = z.object({ charge: z.string(), amount: z.string(), currency: z.string() })

function refundTool(interlock: Interlock, premises?: (args: { charge: string }) => Record<string, never> | undefined) {
  return gatedTool(tool({ description: 'Refund a Stripe charge.', inputSchema: refundInput }), { interlock, thread: 'chat-1', target: 'stripe', action: 'refund', premises: premises as never })
}

/** Refunds the input when asked, then says what the tool answered. */
const refundOnce =
  (input: Record<string, unknown>): Script =>
  (prompt) => {
    const [r] = lastResults(prompt)
    return r ? [say(`${r.type}: ${r.value}`)] : [call('refund', input)]
  }

const ask = (text: string): ModelMessage[] => [{ role: 'user', content: text }]
const effectOf = (t: string) => /effect ([0-9a-f]{64})/.exec(t)?.[1]

describe('gatedTool in generateText', () => {
  it('refunds once through the stripe target; the model gets the result as text, not an error; the output keeps the state and the receipt', async () => {
    world = await agentWorld()
    const interlock = await world.open()
    const model = scriptedModel(refundOnce({ charge: 'ch_1', amount: '25.00', currency: 'usd' }))
    const result = await generateText({ model, tools: { refund: refundTool(interlock) }, messages: ask('Refund 25 USD of ch_1.'), stopWhen: stepCountIs(3) })

    expect(world.stripe.refunds).toMatchObject([{ charge: 'ch_1', amount: 2500 }])
    const [seen] = allResults(model.doGenerateCalls[1]!.prompt)
    expect(seen).toMatchObject({ toolName: 'refund', type: 'text', value: expect.stringMatching(/^Done \(effect [0-9a-f]{64}\)\.\nResult: .*"status":"succeeded"/) })
    const output = result.toolResults[0]!.output as GatedOutput
    expect(output).toMatchObject({ state: 'COMMITTED', effectId: effectOf(seen!.value), receipt: { charge: 'ch_1', status: 'succeeded' } })
    expect(await world.journal()).toMatchObject([{ effectId: output.effectId, state: 'COMMITTED', thread: 'ai-sdk/chat-1' }])
    expect(result.text).toMatch(/^text: Done/)
  })

  it('a call re-made with a new toolCallId before its result was saved (a crash) is the same effect; a repeat the model makes after seeing the first result is a new one', async () => {
    world = await agentWorld()
    const interlock = await world.open()
    const input = { charge: 'ch_1', amount: '10.00', currency: 'usd' }
    // Asked for two refunds of 10, the model calls once, reads the result, and calls again.
    const model = scriptedModel((prompt) => {
      const done = allResults(prompt)
      return done.length < 2 ? [call('refund', input)] : [say('Both refunds are done.')]
    })
    const refund = refundTool(interlock)
    const result = await generateText({ model, tools: { refund }, messages: ask('Refund ch_1 twice, 10 USD each.'), stopWhen: stepCountIs(4) })
    const [first, second] = result.toolResults.map((r) => r.output as GatedOutput)
    expect(first!.effectId).not.toBe(second!.effectId)
    expect(second).toMatchObject({ state: 'COMMITTED' })
    expect(world.refunds()).toBe(2)

    // The first step again, as a process restarted before it was saved would run it: the model mints a new id.
    const again = (await refund.execute!(input, { toolCallId: 'call_after_restart', messages: ask('Refund ch_1 twice, 10 USD each.'), context: {} })) as GatedOutput
    expect(again).toMatchObject({ state: 'COMMITTED', effectId: first!.effectId })
    expect(again.text).toContain('Already done: this call had been made before')
    // And the second, with the first's result in the messages it was made with.
    const afterFirst: ModelMessage[] = [
      ...ask('Refund ch_1 twice, 10 USD each.'),
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_a', toolName: 'refund', input }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_a', toolName: 'refund', output: { type: 'text', value: first!.text } }] },
    ]
    const secondAgain = (await refund.execute!(input, { toolCallId: 'call_b_after_restart', messages: afterFirst, context: {} })) as GatedOutput
    expect(secondAgain).toMatchObject({ state: 'COMMITTED', effectId: second!.effectId })
    expect(world.refunds()).toBe(2)
  })

  it('a decision whose premises changed (the charge disputed after the model read it) is rejected: an error-text the model can act on, nothing refunded', async () => {
    world = await agentWorld()
    const w = world
    const interlock = await w.open()
    const reads = new Map<string, Record<string, unknown>>()
    const lookUp = tool({
      description: 'Read a Stripe charge.',
      inputSchema: z.object({ charge: z.string() }),
      execute: async ({ charge }) => {
        const body = (await (await fetch(`${w.stripe.url}/v1/charges/${charge}`, { headers: { authorization: `Bearer ${w.stripe.apiKey}` } })).json()) as Record<string, unknown>
        reads.set(charge, body)
        return body
      },
    })
    const premises = ({ charge }: { charge: string }) => {
      const c = reads.get(charge)
      return c && ({ charge: { id: c.id, status: c.status, amount: c.amount, amount_refunded: c.amount_refunded, disputed: c.disputed, currency: c.currency } } as never)
    }
    const model = scriptedModel((prompt) => {
      const [r] = lastResults(prompt)
      if (!r) return [call('look_up_charge', { charge: 'ch_1' })]
      if (r.toolName === 'look_up_charge') {
        w.stripe.updateCharge('ch_1', { disputed: true }) // disputed while the model decides
        return [call('refund', { charge: 'ch_1', amount: '25.00', currency: 'usd' })]
      }
      return [say(`${r.type}: ${r.value}`)]
    })
    await generateText({ model, tools: { look_up_charge: lookUp, refund: refundTool(interlock, premises) }, messages: ask('Refund 25 USD of ch_1.'), stopWhen: stepCountIs(4) })
    const rejected = lastResults(model.doGenerateCalls[2]!.prompt)[0]!
    expect(rejected.type).toBe('error-text')
    expect(rejected.value).toMatch(/^Rejected, nothing was sent: what this call rests on changed since it was read:\n- charge ch_1: disputed changed since the decision \(was false, now true\)/)
    expect(rejected.value).toContain('Read it again and decide anew')
    expect(w.refunds()).toBe(0)
  })

  it('each outcome but COMMITTED reaches the model as error-text that says what to do: FAILED, in flight, AMBIGUOUS, REFUSED', async () => {
    world = await agentWorld()
    const w = world
    const interlock = await w.open()
    const tools = {
      refund: refundTool(interlock),
      tell_support: gatedTool(tool({ description: 'Post to the support channel.', inputSchema: z.object({ text: z.string() }) }), {
        interlock,
        thread: 'chat-1',
        name: 'tell_support',
        target: 'slack',
        action: 'post',
        args: (i) => ({ channel: CHANNEL, text: i.text }),
      }),
    }
    // One call per step, so the faults meet the call meant.
    const plan = [
      () => call('refund', { charge: 'ch_2', amount: '5.00', currency: 'usd' }),
      () => {
        w.stripe.refundStatus = 'failed' // the bank declines it (https://docs.stripe.com/refunds#failed-refunds)
        return call('refund', { charge: 'ch_1', amount: '7.00', currency: 'usd' })
      },
      () => call('tell_support', { text: 'Refunds sent.' }),
      () => call('refund', { charge: 'ch_1', amount: 'five', currency: 'usd' }),
    ]
    const model = scriptedModel((prompt) => {
      const n = allResults(prompt).length
      return n < plan.length ? [plan[n]!()] : [say('reported')]
    })
    w.stripe.fault({ mode: '5xx', status: 503, route: 'POST /v1/refunds', times: 2 })
    w.slack.fault({ mode: 'apply-then-drop', route: 'POST /api/chat.postMessage' })
    await generateText({ model, tools, messages: ask('Refund ch_2 and ch_1, tell support.'), stopWhen: stepCountIs(6) })

    const [inFlight, failed, ambiguous, refused] = allResults(model.doGenerateCalls.at(-1)!.prompt)
    for (const r of [inFlight, failed, ambiguous, refused]) expect(r!.type).toBe('error-text')
    expect(inFlight!.value).toMatch(/^In flight: this call \(effect [0-9a-f]{64}\) is journaled and DISPATCHED/)
    expect(failed!.value).toMatch(/^Failed, nothing was done: stripe refused this call \(effect [0-9a-f]{64}\): .*failed/)
    expect(ambiguous!.value).toMatch(/^AMBIGUOUS: this call \(tell_support on slack, effect [0-9a-f]{64}\) was sent, and nobody can know whether it took effect/)
    expect(ambiguous!.value).toContain(`interlock outbox resolve ${effectOf(ambiguous!.value)} --applied`)
    expect(refused!.value).toMatch(/^Refused, nothing was sent or journaled: .*amount/)
    expect(w.stripe.refunds.map((r) => r.status)).toEqual(['failed'])
    expect(w.slack.postsFor(effectOf(ambiguous!.value)!)).toHaveLength(1)
  })
})

describe('holds', () => {
  it('through the SDK\'s approval flow: a held refund stops the run with an approval request naming the release; still held, resumeApprovals keeps it paused; released through the CLI, the call runs by its saved toolCallId and the model gets the refund, made once', async () => {
    world = await agentWorld({ holdAbove: '100' })
    const interlock = await world.open()
    const model = scriptedModel(refundOnce({ charge: 'ch_1', amount: '250.00', currency: 'usd' }))
    const tools = { refund: refundTool(interlock) }
    const first = await generateText({ model, tools, toolApproval: interlockApproval(tools), messages: ask('Refund 250 USD of ch_1.'), stopWhen: stepCountIs(3) })

    const request = first.content.find((c) => c.type === 'tool-approval-request')
    expect(request).toBeDefined()
    const id = effectOf(request!.reason ?? '')!
    expect(request!.reason).toContain(`interlock outbox release ${id}`)
    expect(world.refunds()).toBe(0)
    expect(model.doGenerateCalls).toHaveLength(1)
    const held = await interlock.store.get(id)
    expect(held).toMatchObject({ state: 'HELD', effect: { key: `call:${request!.toolCall.toolCallId}` } })

    const saved: ModelMessage[] = [...ask('Refund 250 USD of ch_1.'), ...first.responseMessages]
    const early = await resumeApprovals(saved, tools)
    expect(early.held).toMatchObject([{ toolCallId: request!.toolCall.toolCallId, effectId: id }])
    expect(early.messages).toEqual(saved)

    await world.release(id)
    const { messages, held: still } = await resumeApprovals(saved, tools)
    expect(still).toEqual([])
    expect(messages.at(-1)).toEqual({ role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request!.approvalId, approved: true }] })
    const second = await generateText({ model, tools, toolApproval: interlockApproval(tools), messages, stopWhen: stepCountIs(3) })
    expect(world.stripe.refundsFor(id)).toHaveLength(1)
    expect(world.refunds()).toBe(1)
    expect(lastResults(model.doGenerateCalls.at(-1)!.prompt)[0]).toMatchObject({ toolCallId: request!.toolCall.toolCallId, type: 'text', value: expect.stringMatching(`^Done \\(effect ${id}\\)`) })
    expect(second.text).toMatch(/^text: Done/)
  })

  it('without the approval flow: the model is told who releases it and to call again once released; called again (a new toolCallId) after the release, it is the same effect, made once', async () => {
    world = await agentWorld({ holdAbove: '100' })
    const w = world
    const interlock = await w.open()
    const input = { charge: 'ch_1', amount: '250.00', currency: 'usd' }
    const model = scriptedModel(refundOnce(input))
    const tools = { refund: refundTool(interlock) }
    const first = await generateText({ model, tools, messages: ask('Refund 250 USD of ch_1.'), stopWhen: stepCountIs(3) })
    const told = lastResults(model.doGenerateCalls[1]!.prompt)[0]!
    const id = effectOf(told.value)!
    expect(told.type).toBe('error-text')
    expect(told.value).toContain(`interlock outbox release ${id}`)
    expect(told.value).toContain('Call this tool again with the same arguments once it is released to get its result.')
    expect(w.refunds()).toBe(0)

    await w.release(id)
    const later = [...ask('Refund 250 USD of ch_1.'), ...first.responseMessages, ...ask('It was released; try again.')]
    const again = scriptedModel((prompt) => (lastResults(prompt).length ? [say('done')] : [call('refund', input)]))
    const second = await generateText({ model: again, tools, messages: later, stopWhen: stepCountIs(3) })
    expect(second.toolResults[0]!.output).toMatchObject({ state: 'COMMITTED', effectId: id })
    expect(w.stripe.refundsFor(id)).toHaveLength(1)
    expect(w.refunds()).toBe(1)
  })
})
