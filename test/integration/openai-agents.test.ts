/**
 * agent-interlock/openai-agents in the real Agents SDK runtime (0.20), with
 * its ScriptedModel standing in for the model (no network), against the
 * Stripe and Slack emulators: what the model is told, which effect each call
 * is across resumes, stale premises and holds. The crash of a real process and
 * the operator's CLI are in test/e2e/openai-agents-example.test.ts.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, run, RunState, setTracingDisabled, type AgentInputItem } from '@openai/agents'
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { generateKeyPair, openInterlock, type Interlock } from '../../src/core/index.js'
import { denyEffect, releaseEffect } from '../../src/core/outbox/release.js'
import { heldCalls, interlockTool, rerunInput, resumeRun } from '../../src/integrations/openai-agents/index.js'
import { SlackEmulator } from '../emulators/slack.js'
import { StripeEmulator } from '../emulators/stripe.js'

setTracingDisabled(true)

let stripe: StripeEmulator
let slack: SlackEmulator
const open: Interlock[] = []
const alice = generateKeyPair('operator', 'alice')

beforeAll(async () => {
  stripe = await new StripeEmulator().start()
  slack = await new SlackEmulator().start()
  slack.seedChannel({ id: 'C0REFUNDS', name: 'refunds' })
})
afterAll(async () => {
  for (const i of open) await i.close()
  await stripe?.close()
  await slack?.close()
})

async function interlockHere(): Promise<Interlock> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-openai-agents-'))
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
public_key = "${alice.publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "stripe"
when = [{ arg = "amount", above = "100.00" }]
`,
  )
  const interlock = await openInterlock({ cwd: dir, env: { STRIPE_API_KEY: stripe.apiKey, SLACK_TOKEN: slack.token } })
  open.push(interlock)
  return interlock
}

/** A fresh charge of 500.00 USD per test: the ledgers are per charge. */
function charge(): string {
  const id = `ch_${randomUUID().replaceAll('-', '')}`
  stripe.seedCharge({ id, amount: 50_000, currency: 'usd' })
  return id
}

const refundsOf = (ch: string) => stripe.refunds.filter((r) => r.charge === ch)
const postsOf = (text: string) => [...slack.messages.values()].filter((m) => m.text === text)

const Refund = z.object({ charge: z.string(), amount: z.string(), currency: z.string() })
const Notify = z.object({ channel: z.string(), text: z.string() })

function tools(interlock: Interlock, refund: Partial<Parameters<typeof interlockTool>[1]> = {}) {
  return [
    interlockTool(interlock, { name: 'refund', description: 'Refund part of a charge.', parameters: Refund, target: 'stripe', ...refund }),
    interlockTool(interlock, { name: 'notify', description: 'Post to Slack.', parameters: Notify, target: 'slack', action: 'post' }),
  ]
}

/** Each entry answers one model turn; a call gets a fresh callId each time it is asked for, as a real model's. */
type Turn = { call: string; args: Record<string, string> } | { say: string }

interface Scripted {
  model: ScriptedModel
  /** The callIds this model minted, in order. */
  minted: string[]
  /** What the tools answered, as the model read it on each turn. */
  seen: string[][]
}

function scripted(turns: Turn[]): Scripted {
  const minted: string[] = []
  const seen: string[][] = []
  const model = new ScriptedModel(
    turns.map((t) =>
      modelResponder(({ request }) => {
        seen.push(outputsIn(request.input as AgentInputItem[]))
        if ('say' in t) return [assistantMessage(t.say)]
        const callId = `call_${randomUUID().slice(0, 8)}`
        minted.push(callId)
        return [functionCall(t.call, t.args, { callId })]
      }),
    ),
  )
  return { model, minted, seen }
}

function outputsIn(input: string | AgentInputItem[]): string[] {
  if (typeof input === 'string') return []
  return input.flatMap((i) => {
    if (i.type !== 'function_call_result') return []
    const o = i.output as string | { text?: string }
    return [typeof o === 'string' ? o : (o.text ?? '')]
  })
}

function agentWith(interlock: Interlock, model: ScriptedModel, refund: Partial<Parameters<typeof interlockTool>[1]> = {}) {
  return new Agent({ name: 'Refunds', instructions: 'Refund what you are asked to.', tools: tools(interlock, refund), model })
}

const operator = (interlock: Interlock) => ({ store: interlock.store, operators: interlock.operators, policy: interlock.policy, key: alice, clock: { now: () => new Date() } })

describe('a refund through interlockTool', () => {
  it('is made once, journaled to the run\'s thread, and the model is told it is done with Stripe\'s answer', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const s = scripted([{ call: 'refund', args: { charge: ch, amount: '40.00', currency: 'usd' } }, { say: 'Refunded.' }])
    const result = await run(agentWith(interlock, s.model), 'Refund 40.00 USD', { context: { interlockThread: 'support-1' } })
    expect(result.finalOutput).toBe('Refunded.')
    expect(refundsOf(ch)).toHaveLength(1)
    const [snap] = await interlock.store.list()
    expect(snap).toMatchObject({ state: 'COMMITTED', effect: { thread: 'openai-agents/support-1', target: 'stripe', action: 'refund' } })
    expect(stripe.refundsFor(snap!.effect.id)).toHaveLength(1)
    expect(s.seen[1]![0]).toMatch(new RegExp(`^Done \\(effect ${snap!.effect.id}\\)\\.\\nResult: .*"refund":"${refundsOf(ch)[0]!.id}"`))
  })

  it('fails the run loudly when its context names no thread, and journals nothing', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const s = scripted([{ call: 'refund', args: { charge: ch, amount: '40.00', currency: 'usd' } }, { say: 'never' }])
    await expect(run(agentWith(interlock, s.model), 'Refund 40.00 USD', { context: { conversation: 'c-1' } })).rejects.toThrow(/no Interlock thread for this run: its context has no interlockThread/)
    expect(await interlock.store.list()).toEqual([])
    expect(refundsOf(ch)).toEqual([])
  })
})

describe('which effect a call is', () => {
  it('run again from its input (as after a crash), the same run\'s calls are the same effects though the model gave them new call ids; an identical call made twice in a run is two refunds', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const args = { charge: ch, amount: '5.00', currency: 'usd' }
    const turns: Turn[] = [{ call: 'refund', args }, { call: 'refund', args }, { say: 'Refunded twice.' }]
    const first = scripted(turns)
    await run(agentWith(interlock, first.model), 'Refund 5.00 USD twice', { context: { interlockThread: 'support-2', interlockRun: 'request-7' } })
    // An intentional repeat: two calls, two effects, two refunds.
    expect(refundsOf(ch)).toHaveLength(2)
    expect(first.seen[1]![0]).toMatch(/^Done/)
    expect(first.seen[2]![1]).toMatch(/^Done/)

    const again = scripted(turns)
    await rerunInput(interlock, agentWith(interlock, again.model), 'Refund 5.00 USD twice', { interlockThread: 'support-2', interlockRun: 'request-7' })
    expect(again.minted).toHaveLength(2)
    expect(again.minted.some((id) => first.minted.includes(id))).toBe(false)
    // The re-execution: the same two effects, found made, not made again.
    expect(refundsOf(ch)).toHaveLength(2)
    expect(again.seen[2]).toEqual([expect.stringMatching(/^Already done: this call had been made before/), expect.stringMatching(/^Already done: this call had been made before/)])
    expect(await interlock.store.list()).toHaveLength(2)

    // Another run (another request) asking the same is a new refund.
    const other = scripted([{ call: 'refund', args }, { say: 'Refunded.' }])
    await run(agentWith(interlock, other.model), 'Refund 5.00 USD', { context: { interlockThread: 'support-2', interlockRun: 'request-8' } })
    expect(refundsOf(ch)).toHaveLength(3)
  })

  it('resumed from a saved RunState, the pending call keeps its effect and a turn the model is asked again keeps its effects under new call ids', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const text = `Refunded 150.00 USD on ${ch}.`
    const turns: Turn[] = [
      { call: 'refund', args: { charge: ch, amount: '150.00', currency: 'usd' } },
      { call: 'notify', args: { channel: 'C0REFUNDS', text } },
      { say: 'Done and told.' },
    ]
    const first = scripted(turns)
    const paused = await run(agentWith(interlock, first.model), 'Refund 150.00 USD and tell #refunds', { context: { interlockThread: 'support-3' } })
    expect(paused.interruptions).toHaveLength(1)
    const saved = paused.state.toString()
    const [held] = heldCalls(paused.state)
    expect(held).toMatchObject({ callId: first.minted[0], toolName: 'refund' })
    await releaseEffect(operator(interlock), held!.effectId)

    const resumed = scripted(turns.slice(1))
    const done = await resumeRun(interlock, agentWith(interlock, resumed.model), saved)
    expect(done.finalOutput).toBe('Done and told.')
    expect(refundsOf(ch)).toHaveLength(1)
    expect(postsOf(text)).toHaveLength(1)

    // The same saved state resumed again (as after a crash once it had been used): the notify turn is asked again.
    const twice = scripted(turns.slice(1))
    await resumeRun(interlock, agentWith(interlock, twice.model), saved)
    expect(twice.minted[0]).not.toBe(resumed.minted[0])
    expect(twice.seen[1]).toEqual([expect.stringMatching(/^Already done/), expect.stringMatching(/^Already done/)])
    expect(refundsOf(ch)).toHaveLength(1)
    expect(postsOf(text)).toHaveLength(1)
  })
})

describe('held by a policy rule', () => {
  const big = (ch: string): Turn[] => [{ call: 'refund', args: { charge: ch, amount: '150.00', currency: 'usd' } }, { say: 'Finished.' }]

  it('pauses the run through the SDK\'s interruption with nothing sent; heldCalls says who releases it', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const s = scripted(big(ch))
    const paused = await run(agentWith(interlock, s.model), 'Refund 150.00 USD', { context: { interlockThread: 'support-4' } })
    expect(paused.finalOutput).toBeUndefined()
    expect(paused.interruptions.map((i) => i.name)).toEqual(['refund'])
    const [held] = heldCalls(paused.state)
    expect(held!.text).toContain('rule "large-refunds"')
    expect(held!.text).toContain(`interlock outbox release ${held!.effectId}`)
    expect((await interlock.store.get(held!.effectId))?.state).toBe('HELD')
    expect(stripe.requests.filter((r) => r.path === '/v1/refunds')).not.toContainEqual(expect.objectContaining({ idempotencyKey: held!.effectId }))
    expect(refundsOf(ch)).toEqual([])
  })

  it('approved in the app instead of released by an operator, it is still not sent: the model is told it waits for a release', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const s = scripted(big(ch))
    const agent = agentWith(interlock, s.model)
    const paused = await run(agent, 'Refund 150.00 USD', { context: { interlockThread: 'support-5' } })
    const state = await RunState.fromString(agent, paused.state.toString())
    state.approve(state.getInterruptions()[0]!)
    await run(agent, state)
    expect(s.seen[1]![0]).toMatch(/^Held for operators: .*Nothing was sent\.\nAn operator releases it with:\n {2}interlock outbox release [0-9a-f]{64}/s)
    expect(refundsOf(ch)).toEqual([])
  })

  it('denied by an operator, the resumed run tells the model it was refused; nothing is refunded', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const first = scripted(big(ch))
    const paused = await run(agentWith(interlock, first.model), 'Refund 150.00 USD', { context: { interlockThread: 'support-6' } })
    const [held] = heldCalls(paused.state)
    await denyEffect(operator(interlock), held!.effectId, 'the customer asked for store credit')
    const resumed = scripted(big(ch).slice(1))
    const done = await resumeRun(interlock, agentWith(interlock, resumed.model), paused.state.toString())
    expect(done.finalOutput).toBe('Finished.')
    expect(resumed.seen[0]![0]).toMatch(/^Rejected, nothing was sent: .*the customer asked for store credit/s)
    expect(refundsOf(ch)).toEqual([])
  })

  it('with onHeld "result" the run does not pause: the model is told the call is held and who releases it', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const s = scripted(big(ch))
    const done = await run(agentWith(interlock, s.model, { onHeld: 'result' }), 'Refund 150.00 USD', { context: { interlockThread: 'support-7' } })
    expect(done.interruptions).toEqual([])
    expect(done.finalOutput).toBe('Finished.')
    const [snap] = await interlock.store.list()
    expect(snap!.state).toBe('HELD')
    expect(s.seen[1]![0]).toContain(`interlock outbox release ${snap!.effect.id}`)
    // The run's n-th identical call is its own effect: told to call again, the model would make a second held refund.
    expect(s.seen[1]![0]).toContain('Do not call this tool again for it')
    expect(s.seen[1]![0]).not.toContain('Call this tool again')
    expect(refundsOf(ch)).toEqual([])
  })
})

describe('a stale premise', () => {
  it('the charge disputed after the model decided, while the refund waited for its release: rejected, nothing sent, and the model is told to look again', async () => {
    const interlock = await interlockHere()
    const ch = charge()
    const first = scripted([{ call: 'refund', args: { charge: ch, amount: '150.00', currency: 'usd' } }, { say: 'Finished.' }])
    const agent = (model: ScriptedModel) => agentWith(interlock, model, { premises: 'capture' })
    const paused = await run(agent(first.model), 'Refund 150.00 USD', { context: { interlockThread: 'support-8' } })
    const [held] = heldCalls(paused.state)
    stripe.updateCharge(ch, { disputed: true })
    await releaseEffect(operator(interlock), held!.effectId)

    const resumed = scripted([{ say: 'I will look at the charge again.' }])
    await resumeRun(interlock, agent(resumed.model), paused.state.toString())
    expect(resumed.seen[0]![0]).toMatch(/^Rejected, nothing was sent: what this call rests on changed since it was read:\n- charge ch_\w+: disputed changed since the decision \(was false, now true\)\nRead it again and decide anew/)
    expect((await interlock.store.get(held!.effectId))?.state).toBe('REJECTED')
    expect(stripe.requests.filter((r) => r.path === '/v1/refunds' && r.idempotencyKey === held!.effectId)).toEqual([])
    expect(refundsOf(ch)).toEqual([])
  })
})
