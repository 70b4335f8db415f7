/**
 * `agent-interlock/langgraph` on the real LangGraph runtime (a StateGraph with
 * the prebuilt ToolNode, the SQLite checkpointer) and a scripted model, the
 * refunds going to the Stripe emulator, whose own ledger is the truth: what a
 * run commits, what a replayed tool node does, a stale premise taken from the
 * graph state, refused arguments, and a run without a thread. Holds and
 * crashes: test/e2e/langgraph-hold.test.ts, langgraph-crash.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HumanMessage } from '@langchain/core/messages'
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openInterlock, type Interlock } from '../../src/core/index.js'
import { callKey, threadName } from '../../src/integrations/agent/index.js'
import { gatedTool, interlockThread } from '../../src/integrations/langgraph/index.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { lookupChargeTool, plainRefundTool, refundAgent, refundSchema, scriptedModel, transcript, type AgentStateType, type PlannedCall } from '../helpers/langgraph-agent.js'

let stripe: StripeEmulator
const dirs: string[] = []
const open: { close(): unknown }[] = []
beforeAll(async () => {
  stripe = await new StripeEmulator().start()
})
afterAll(async () => {
  await stripe?.close()
})
beforeEach(() => {
  stripe.refunds.length = 0
  stripe.requests.length = 0
  stripe.charges.clear()
  stripe.seedCharge({ id: 'ch_1', amount: 2000, currency: 'usd' })
  stripe.seedCharge({ id: 'ch_2', amount: 90000, currency: 'usd' })
})
afterEach(async () => {
  for (const o of open.splice(0)) await o.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

async function scene(): Promise<{ dir: string; interlock: Interlock; checkpointer: SqliteSaver }> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-langgraph-'))
  dirs.push(dir)
  writeFileSync(
    join(dir, 'interlock.toml'),
    `[store]
path = "journal.db"

[gate]
max_attempts = 2
backoff_ms = 5

[targets.stripe]
type = "stripe"
api_key = "\${STRIPE_API_KEY}"
base_url = "${stripe.url}"
`,
  )
  const interlock = await openInterlock({ cwd: dir, env: { STRIPE_API_KEY: stripe.apiKey }, sleep: async () => {} })
  const checkpointer = SqliteSaver.fromConnString(join(dir, 'checkpoints.db'))
  open.push(interlock, { close: () => checkpointer.db.close() })
  return { dir, interlock, checkpointer }
}

const declared = { name: 'refund', description: 'Refund part or all of a Stripe charge.', schema: refundSchema }
const refund = (charge: string, amount: string): PlannedCall => ({ name: 'refund', args: { charge, amount, currency: 'usd' } })
const ask = (text: string) => ({ messages: [new HumanMessage(text)] })
const refundsOf = (charge: string) => stripe.refunds.filter((r) => r.charge === charge)
const toolMessages = (messages: AgentStateType['messages']) => transcript(messages).filter((m) => m.type === 'tool')

describe('a gated tool in a LangGraph run', () => {
  it('refunds once through Interlock, journaled under the thread and keyed by the tool_call_id; the model reads the result', async () => {
    const { interlock, checkpointer } = await scene()
    const model = scriptedModel([[refund('ch_1', '5.00')]])
    const graph = refundAgent({ model, tools: [gatedTool(interlock, declared, { target: 'stripe' })], shape: 'toolnode', checkpointer })
    const config = { configurable: { thread_id: 'order-1' } }
    const out = await graph.invoke(ask('Refund 5 USD of ch_1'), config)

    const [said] = toolMessages(out.messages)
    expect(said).toMatchObject({ name: 'refund', status: 'success', interlock: { state: 'COMMITTED', replayed: false } })
    expect(said!.content).toMatch(/^Done \(effect [0-9a-f]{64}\)\.\nResult: \{"refund":"re_emu\d+","status":"succeeded","charge":"ch_1","amount":500,/)
    expect(out.messages.at(-1)!.content).toContain('refund: Done (effect')
    expect(refundsOf('ch_1')).toHaveLength(1)
    expect(refundsOf('ch_1')[0]!.amount).toBe(500)

    const effects = await interlock.store.list()
    expect(effects.map((e) => [e.effect.thread, e.effect.key, e.state])).toEqual([['langgraph/order-1', callKey(said!.toolCallId!), 'COMMITTED']])
    expect(interlockThread(config)).toBe(threadName('langgraph', 'order-1'))
    expect(stripe.refundsFor(said!.interlock!.effectId as string)).toHaveLength(1)
  })

  it('a tool node LangGraph runs again for the same message (replayed from the checkpoint before it) does not refund again; a plain tool does', async () => {
    const { interlock, checkpointer } = await scene()
    const replay = async (tools: Parameters<typeof refundAgent>[0]['tools'], threadId: string) => {
      const graph = refundAgent({ model: scriptedModel([[refund('ch_1', '5.00')]]), tools, shape: 'toolnode', checkpointer })
      const config = { configurable: { thread_id: threadId } }
      await graph.invoke(ask('Refund 5 USD of ch_1'), config)
      // The checkpoint whose next step is the tool node: the model's message with its tool call, saved.
      let before
      for await (const s of graph.getStateHistory(config)) if (s.next.includes('tools')) before = s
      expect(before, 'a checkpoint before the tool node').toBeDefined()
      const again = await graph.invoke(null, before!.config)
      return toolMessages(again.messages)
    }

    const gated = await replay([gatedTool(interlock, declared, { target: 'stripe' })], 'replayed-gated')
    expect(gated).toHaveLength(1)
    expect(gated[0]).toMatchObject({ status: 'success', interlock: { state: 'COMMITTED', replayed: true } })
    expect(gated[0]!.content).toContain('Already done: this call had been made before')
    expect(refundsOf('ch_1')).toHaveLength(1)

    await replay([plainRefundTool(stripe)], 'replayed-plain')
    expect(refundsOf('ch_1')).toHaveLength(3)
  })

  it('the model asking twice (two tool calls, two ids) is two refunds, not a retry', async () => {
    const { interlock, checkpointer } = await scene()
    const model = scriptedModel([[refund('ch_1', '5.00')], [refund('ch_1', '5.00')]])
    const graph = refundAgent({ model, tools: [gatedTool(interlock, declared, { target: 'stripe' })], shape: 'toolnode', checkpointer })
    const out = await graph.invoke(ask('Refund 5 USD of ch_1, twice: two items came back'), { configurable: { thread_id: 'twice' } })
    const said = toolMessages(out.messages)
    expect(said.map((m) => [m.status, m.interlock?.state, m.interlock?.replayed])).toEqual([
      ['success', 'COMMITTED', false],
      ['success', 'COMMITTED', false],
    ])
    expect(said[0]!.toolCallId).not.toBe(said[1]!.toolCallId)
    expect(said[0]!.interlock!.effectId).not.toBe(said[1]!.interlock!.effectId)
    expect(refundsOf('ch_1')).toHaveLength(2)
  })

  describe('premises from the graph state the tool node read', () => {
    const premises = (args: { charge?: unknown }, state: AgentStateType) => {
      const seen = state.charges[String(args.charge)]
      return seen ? { charge: { ...seen } } : undefined
    }
    const run = async (o: { withPremises: boolean; change: Parameters<StripeEmulator['updateCharge']>[1] }) => {
      const { interlock, checkpointer } = await scene()
      // The model reads the charge, then decides; as it decides, the charge changes at Stripe.
      const model = scriptedModel([[{ name: 'lookup_charge', args: { charge: 'ch_1' } }], [refund('ch_1', '5.00')]], (turn) => {
        if (turn === 1) stripe.updateCharge('ch_1', o.change)
      })
      const gated = gatedTool<AgentStateType>(interlock, declared, { target: 'stripe', ...(o.withPremises ? { premises } : {}) })
      const graph = refundAgent({ model, tools: [lookupChargeTool(stripe), gated], shape: 'toolnode', checkpointer })
      const out = await graph.invoke(ask('Refund 5 USD of ch_1'), { configurable: { thread_id: 'stale' } })
      return { said: toolMessages(out.messages).find((m) => m.name === 'refund')!, last: String(out.messages.at(-1)!.content), interlock }
    }

    it('the charge disputed after the model decided: the model is told it was rejected and why, nothing is refunded', async () => {
      const { said, last, interlock } = await run({ withPremises: true, change: { disputed: true } })
      expect(said).toMatchObject({ status: 'error', interlock: { state: 'REJECTED' } })
      expect(said.content).toContain('Rejected, nothing was sent: what this call rests on changed since it was read')
      expect(said.content).toContain('charge ch_1: disputed changed since the decision (was false, now true)')
      expect(said.content).toContain('Read it again and decide anew')
      expect(last).toContain('refund: Rejected, nothing was sent')
      expect(refundsOf('ch_1')).toHaveLength(0)
      expect((await interlock.store.list()).map((e) => e.state)).toEqual(['REJECTED'])
    })

    it('part of the charge refunded elsewhere after the decision: rejected with the state\'s premises; without them the stale refund goes through', async () => {
      const change = { amount_refunded: 1000 }
      const guarded = await run({ withPremises: true, change })
      expect(guarded.said).toMatchObject({ status: 'error', interlock: { state: 'REJECTED' } })
      expect(guarded.said.content).toContain('amount_refunded changed since the decision (was 0, now 1000)')
      expect(refundsOf('ch_1')).toHaveLength(0)

      stripe.updateCharge('ch_1', { amount_refunded: 0 })
      const unguarded = await run({ withPremises: false, change })
      expect(unguarded.said).toMatchObject({ status: 'success', interlock: { state: 'COMMITTED' } })
      expect(refundsOf('ch_1')).toHaveLength(1)
    })
  })

  it('arguments the target refuses are a tool error the model can read; nothing is sent or journaled', async () => {
    const { interlock, checkpointer } = await scene()
    const model = scriptedModel([[refund('ch_1', 'five dollars')]])
    const graph = refundAgent({ model, tools: [gatedTool(interlock, declared, { target: 'stripe' })], shape: 'toolnode', checkpointer })
    const out = await graph.invoke(ask('Refund ch_1'), { configurable: { thread_id: 'refused' } })
    const [said] = toolMessages(out.messages)
    expect(said).toMatchObject({ status: 'error', interlock: { state: 'REFUSED' } })
    expect(said!.content).toMatch(/^Refused, nothing was sent or journaled: .*amount/)
    expect(await interlock.store.list()).toEqual([])
    expect(stripe.requests.filter((r) => r.method === 'POST')).toHaveLength(0)
  })

  it('a run without a thread_id (no checkpointer) is told why, and nothing is sent', async () => {
    const { interlock } = await scene()
    const model = scriptedModel([[refund('ch_1', '5.00')]])
    const graph = refundAgent({ model, tools: [gatedTool(interlock, declared, { target: 'stripe' })], shape: 'toolnode' })
    const out = await graph.invoke(ask('Refund ch_1'))
    const [said] = toolMessages(out.messages)
    expect(said!.status).toBe('error')
    expect(said!.content).toContain('no configurable.thread_id')
    expect(refundsOf('ch_1')).toHaveLength(0)
  })
})
