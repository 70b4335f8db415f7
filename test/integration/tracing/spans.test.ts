/**
 * Interlock's spans with the OpenTelemetry SDK's in-memory exporter: the tree
 * of an inline submit under the caller's span, of an outbox proposal, of
 * recovery, and of a LangGraph tool call under the span around the graph's
 * run; what the spans carry (ids, names, tier, state; never an argument or a
 * secret).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { trace } from '@opentelemetry/api'
import { HumanMessage } from '@langchain/core/messages'
import type { ReadableSpan } from '@opentelemetry/sdk-trace'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openInterlock, type Interlock } from '../../../src/core/interlock.js'
import { toEffect } from '../../../src/core/effect.js'
import { gatedTool } from '../../../src/integrations/langgraph/index.js'
import { StripeEmulator } from '../../emulators/stripe.js'
import { refundAgent, refundSchema, scriptedModel } from '../../helpers/langgraph-agent.js'
import { journalDispatched } from '../../helpers/sqlite-gate.js'
import { exported, inMemoryTracing, parentOf } from '../../helpers/tracing.js'

const STRIPE_KEY = 'sk_test_51TracingKeyThatMustNeverLeakIntoSpans'
const ARG = 'ch_3TracingArgValueNeverInASpan9'
const exporter = inMemoryTracing()
let stripe: StripeEmulator
const dirs: string[] = []
const open: Interlock[] = []

beforeAll(async () => {
  stripe = await new StripeEmulator(STRIPE_KEY).start()
  stripe.seedCharge({ id: ARG, amount: 900_000, currency: 'usd' })
  stripe.seedCharge({ id: 'ch_1', amount: 900_000, currency: 'usd' })
})
afterAll(async () => {
  for (const i of open) await i.close()
  await stripe.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
beforeEach(() => exporter.reset())

async function interlock(): Promise<Interlock> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-tracing-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'interlock.toml'), `[store]\npath = "journal.db"\n\n[targets.stripe]\ntype = "stripe"\napi_key = "\${STRIPE_API_KEY}"\nbase_url = "${stripe.url}"\n`)
  const i = await openInterlock({ cwd: dir, env: { STRIPE_API_KEY: STRIPE_KEY }, sleep: async () => {} })
  open.push(i)
  return i
}

const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name)
const one = (name: string): ReadableSpan => {
  const [s, ...more] = named(name)
  expect(s, `one ${name} span`).toBeDefined()
  expect(more).toEqual([])
  return s!
}
const childrenOf = (s: ReadableSpan) => exporter.getFinishedSpans().filter((c) => parentOf(c) === s.spanContext().spanId).map((c) => c.name)

describe('the span tree', () => {
  it('an inline submit under the caller\'s span: submit, then propose, premises, dispatch, commit; ids and names, never args or secrets', async () => {
    const i = await interlock()
    const input = { thread: 'agent-run-1', target: 'stripe', action: 'refund', args: { charge: ARG, amount: '5.00', currency: 'usd' } }
    const outcome = await trace.getTracer('agent').startActiveSpan('agent.tool_call', async (span) => {
      try {
        return await i.gate.submit(input)
      } finally {
        span.end()
      }
    })
    expect(outcome.status).toBe('committed')
    const caller = one('agent.tool_call')
    const submit = one('interlock.submit')
    expect(parentOf(submit)).toBe(caller.spanContext().spanId)
    expect(submit.spanContext().traceId).toBe(caller.spanContext().traceId)
    // Premises are checked right before the commit that makes the effect DISPATCHED (advance.ts), then the send and its record.
    expect(childrenOf(submit)).toEqual(['interlock.premises', 'interlock.propose', 'interlock.dispatch', 'interlock.commit'])
    expect(submit.attributes).toMatchObject({ 'interlock.effect_id': toEffect(input).id, 'interlock.thread': 'agent-run-1', 'interlock.target': 'stripe', 'interlock.action': 'refund', 'interlock.tier': 1, 'interlock.outcome': 'committed' })
    expect(one('interlock.dispatch').attributes).toMatchObject({ 'interlock.attempt': 1 })
    expect(one('interlock.commit').attributes).toMatchObject({ 'interlock.state': 'COMMITTED' })
    const all = exported(exporter.getFinishedSpans())
    expect(all).not.toContain(ARG)
    expect(all).not.toContain(STRIPE_KEY)
    expect(all).not.toContain('5.00')
    // The submit span's context is journaled with the effect: the trace a relay or recovery continues.
    const journaled = (await i.store.get(outcome.effectId))!.effect.trace
    expect(journaled?.traceparent).toBe(`00-${submit.spanContext().traceId}-${submit.spanContext().spanId}-01`)
  })

  it('an outbox proposal journals its span\'s context; recovery is one span with a child per effect, linked to the trace that asked', async () => {
    const i = await interlock()
    const handle = await trace.getTracer('agent').startActiveSpan('agent.run', async (span) => {
      try {
        return await i.outbox.submit({ thread: 'agent-run-2', target: 'stripe', action: 'refund', args: { charge: 'ch_1', amount: '6.00', currency: 'usd' } })
      } finally {
        span.end()
      }
    })
    const submit = one('interlock.submit')
    expect(submit.attributes).toMatchObject({ 'interlock.mode': 'outbox', 'interlock.state': 'PROPOSED' })
    expect((await i.store.get(handle.effectId))!.effect.trace?.traceparent).toBe(`00-${submit.spanContext().traceId}-${submit.spanContext().spanId}-01`)

    // An effect left DISPATCHED by a process that died, finished by recovery.
    const left = toEffect({ thread: 'agent-run-3', target: 'stripe', action: 'refund', args: { charge: 'ch_1', amount: '7.00', currency: 'usd' }, trace: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` } })
    await journalDispatched(i.store, left, 1)
    exporter.reset()
    await i.gate.recover()
    const recover = one('interlock.recover')
    const perEffect = named('interlock.recover.effect')
    expect(perEffect.map((s) => s.attributes['interlock.effect_id']).sort()).toEqual([handle.effectId, left.id].sort())
    for (const s of perEffect) expect(parentOf(s)).toBe(recover.spanContext().spanId)
    const leftSpan = perEffect.find((s) => s.attributes['interlock.effect_id'] === left.id)!
    expect(leftSpan.links.map((l) => l.context.spanId)).toEqual(['b'.repeat(16)])
    expect(childrenOf(leftSpan)).toContain('interlock.dispatch')
  })

  it('a LangGraph tool call under the span around the graph\'s run: interlock.submit is its descendant, in its trace', async () => {
    const i = await interlock()
    const model = scriptedModel([[{ name: 'refund', args: { charge: 'ch_1', amount: '8.00', currency: 'usd' } }]])
    const graph = refundAgent({ model, tools: [gatedTool(i, { name: 'refund', description: 'Refund a charge.', schema: refundSchema }, { target: 'stripe' })], shape: 'toolnode' })
    await trace.getTracer('app').startActiveSpan('langgraph.invoke', async (span) => {
      try {
        await graph.invoke({ messages: [new HumanMessage('Refund 8 USD of ch_1')] }, { configurable: { thread_id: 'traced' } })
      } finally {
        span.end()
      }
    })
    const run = one('langgraph.invoke')
    const submit = one('interlock.submit')
    expect(submit.spanContext().traceId).toBe(run.spanContext().traceId)
    // The submit's ancestors lead to the graph's run span.
    const byId = new Map(exporter.getFinishedSpans().map((s) => [s.spanContext().spanId, s]))
    let up: ReadableSpan | undefined = submit
    while (up && up !== run) up = byId.get(parentOf(up) ?? '')
    expect(up).toBe(run)
  })
})
