/**
 * A refund a policy rule holds, in a LangGraph run (real runtime, SQLite
 * checkpointer, scripted model, the Stripe emulator): the run pauses with
 * LangGraph's interrupt() (onHeld 'interrupt') or the model is told
 * (onHeld 'report'); an operator releases it with the CLI, as a person does;
 * the resumed run gets the committed result, and Stripe shows one refund.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages'
import { Command } from '@langchain/langgraph'
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openInterlock, type Interlock } from '../../src/core/index.js'
import { gatedTool, heldInterrupts, resumeGraph, type GatedToolOptions } from '../../src/integrations/langgraph/index.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { assertCliBuilt, interlock as cli } from '../helpers/cli.js'
import { refundAgent, refundSchema, scriptedModel, transcript, type PlannedCall } from '../helpers/langgraph-agent.js'

let stripe: StripeEmulator
const dirs: string[] = []
const open: { close(): unknown }[] = []
beforeAll(async () => {
  assertCliBuilt()
  stripe = await new StripeEmulator().start()
})
afterAll(async () => {
  await stripe?.close()
})
afterEach(async () => {
  for (const o of open.splice(0)) await o.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

const env = () => ({ STRIPE_API_KEY: stripe.apiKey })

async function scene(charge: string): Promise<{ dir: string; interlock: Interlock; checkpointer: SqliteSaver }> {
  stripe.seedCharge({ id: charge, amount: 90000, currency: 'usd' })
  const dir = mkdtempSync(join(tmpdir(), 'interlock-langgraph-hold-'))
  dirs.push(dir)
  const keygen = await cli(['operator', 'keygen', '--name', 'alice', '--json'], { cwd: dir })
  expect(keygen.code, keygen.stderr).toBe(0)
  const { publicKey } = JSON.parse(keygen.stdout) as { publicKey: string }
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[targets.stripe]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"

[[operators]]
name = "alice"
public_key = "${publicKey}"

[[policy.rules]]
name = "large-refunds"
target = "stripe"
when = [{ arg = "amount", above = "100" }]
`,
  )
  const interlock = await openInterlock({ cwd: dir, env: env() })
  const checkpointer = SqliteSaver.fromConnString(join(dir, 'checkpoints.db'))
  open.push(interlock, { close: () => checkpointer.db.close() })
  return { dir, interlock, checkpointer }
}

async function release(dir: string, effectId: string): Promise<void> {
  const run = await cli(['outbox', 'release', effectId, '--yes', '--key', join(dir, 'alice.operator.key')], { cwd: dir, env: env() })
  expect(run.code, run.stderr).toBe(0)
}

const declared = { name: 'refund', description: 'Refund part or all of a Stripe charge.', schema: refundSchema }
const refund = (charge: string): PlannedCall => ({ name: 'refund', args: { charge, amount: '500.00', currency: 'usd' } })
const refundsOf = (charge: string) => stripe.refunds.filter((r) => r.charge === charge).length
const toolMessages = (messages: BaseMessage[]) => transcript(messages).filter((m) => m.type === 'tool')

function agent(interlock: Interlock, checkpointer: SqliteSaver, model: ReturnType<typeof scriptedModel>, options: Partial<GatedToolOptions> = {}) {
  return refundAgent({ model, tools: [gatedTool(interlock, declared, { target: 'stripe', ...options })], shape: 'toolnode', checkpointer })
}

describe('a held refund in a LangGraph run', () => {
  it("onHeld 'interrupt': the run pauses; resumed before the release it pauses again; released with the CLI, the resumed run gets the committed refund", async () => {
    const { dir, interlock, checkpointer } = await scene('ch_heldpause')
    const graph = agent(interlock, checkpointer, scriptedModel([[refund('ch_heldpause')]]), { onHeld: 'interrupt' })
    const config = { configurable: { thread_id: 'held-pause' } }

    const paused = await graph.invoke({ messages: [new HumanMessage('Refund 500 USD of ch_heldpause')] }, config)
    const [pause] = heldInterrupts(paused)
    expect(pause).toMatchObject({ interlock: 'HELD', rule: 'large-refunds', tool: 'refund', target: 'stripe' })
    const id = pause!.effectId
    expect(pause!.release).toBe(`interlock outbox release ${id}`)
    expect(pause!.text).toContain('Held for operators')
    expect((await graph.getState(config)).next).toEqual(['tools'])
    expect(refundsOf('ch_heldpause')).toBe(0)

    // A resume is not a release: still HELD, the run pauses again.
    const early = await resumeGraph(interlock, graph, config, new Command({ resume: 'go on' }))
    expect(heldInterrupts(early).map((h) => h.effectId)).toEqual([id])
    expect(refundsOf('ch_heldpause')).toBe(0)

    await release(dir, id)
    const done = await resumeGraph(interlock, graph, config, new Command({ resume: 'released' }))
    expect(heldInterrupts(done)).toEqual([])
    expect((await graph.getState(config)).next).toEqual([])
    const [said] = toolMessages(done.messages)
    expect(said).toMatchObject({ status: 'success', interlock: { effectId: id, state: 'COMMITTED' } })
    expect(said!.content).toContain(`effect ${id}`)
    expect(done.messages.at(-1)).toBeInstanceOf(AIMessage)
    expect(refundsOf('ch_heldpause')).toBe(1)
    expect((await interlock.store.list()).map((e) => [e.effect.id, e.state])).toEqual([[id, 'COMMITTED']])
  })

  it("onHeld 'report': the model is told who must release it; released with the CLI, the model's call again joins the held effect and gets the refund; a later identical request is a new effect", async () => {
    const { dir, interlock, checkpointer } = await scene('ch_heldreport')
    // The model calls the refund whenever the user has just spoken, and otherwise answers.
    const model = scriptedModel((messages) => (messages.at(-1)?.getType() === 'human' ? [refund('ch_heldreport')] : undefined))
    const graph = agent(interlock, checkpointer, model)
    const config = { configurable: { thread_id: 'held-report' } }

    const first = await graph.invoke({ messages: [new HumanMessage('Refund 500 USD of ch_heldreport')] }, config)
    const [held] = toolMessages(first.messages)
    expect(held).toMatchObject({ status: 'error', interlock: { state: 'HELD' } })
    const id = held!.interlock!.effectId as string
    expect(held!.content).toContain(`interlock outbox release ${id}`)
    expect(held!.content).toContain('Call this tool again with the same arguments once it is released')
    expect(String(first.messages.at(-1)!.content)).toContain('refund: Held for operators')
    expect(refundsOf('ch_heldreport')).toBe(0)

    await release(dir, id)
    const second = await resumeGraph(interlock, graph, config, { messages: [new HumanMessage('An operator approved it: go ahead.')] })
    const [, again] = toolMessages(second.messages)
    expect(again!.toolCallId).not.toBe(held!.toolCallId)
    expect(again).toMatchObject({ status: 'success', interlock: { effectId: id, state: 'COMMITTED', callId: held!.toolCallId } })
    expect(refundsOf('ch_heldreport')).toBe(1)

    // Settled and told: the same request again is a new refund, held like the first.
    const third = await resumeGraph(interlock, graph, config, { messages: [new HumanMessage('Refund another 500 USD of ch_heldreport.')] })
    const [, , other] = toolMessages(third.messages)
    expect(other).toMatchObject({ status: 'error', interlock: { state: 'HELD' } })
    expect(other!.interlock!.effectId).not.toBe(id)
    expect(refundsOf('ch_heldreport')).toBe(1)
  })
})
