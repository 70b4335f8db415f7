/**
 * One trace per effect across processes, the built binaries traced as users
 * trace them (`NODE_OPTIONS="--import <their SDK set-up>"`,
 * test/fixtures/otel/register.mjs):
 * - an effect proposed here under the agent's span, held by a rule, released
 *   by an operator, and sent by `interlock relay` in another process: the
 *   relay's spans (the hold, then the send) are children of the agent's
 *   submit span, in its trace;
 * - an MCP call whose `_meta` carries a W3C traceparent: `interlock
 *   mcp-proxy`'s span for it is a child of that context, and the submit and
 *   the send are in the same trace.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { trace } from '@opentelemetry/api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '../../src/core/clock.js'
import { parseConfig } from '../../src/core/config/load.js'
import { generateKeyPair, writeKeyFile } from '../../src/core/crypto/keys.js'
import { Outbox } from '../../src/core/outbox/outbox.js'
import { releaseEffect } from '../../src/core/outbox/release.js'
import { RulesPolicy } from '../../src/core/policy/rules.js'
import { openStore } from '../../src/core/stores/open.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { assertCliBuilt } from '../helpers/cli.js'
import { memoryToml, proxyClient } from '../helpers/mcp.js'
import { relayReady, startRelayProc } from '../helpers/relay-procs.js'
import { exported, inMemoryTracing, REGISTER, spansIn } from '../helpers/tracing.js'
import { StripeEmulator } from '../emulators/stripe.js'
import { until } from '../helpers/until.js'

const STRIPE_KEY = 'sk_test_51TracedRelayKeyThatMustNeverLeak'
const exporter = inMemoryTracing()
let stripe: StripeEmulator
const dirs: string[] = []

beforeAll(async () => {
  assertCliBuilt()
  stripe = await new StripeEmulator(STRIPE_KEY).start()
  stripe.seedCharge({ id: 'ch_3TracedChargeForTheRelay', amount: 900_000, currency: 'usd' })
})
afterAll(async () => {
  await stripe.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})


describe('one trace across processes', { timeout: 120_000 }, () => {
  it('proposed here under the agent\'s span, held, released, sent by a relay in another process: the relay\'s spans are in the agent\'s trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-traced-relay-'))
    dirs.push(dir)
    const alice = generateKeyPair('operator', 'alice')
    writeKeyFile(join(dir, 'relay.key'), generateKeyPair('relay', 'relay-t'))
    const toml = `[store]\npath = "journal.db"\n\n[relay]\nkey = "relay.key"\n\n[targets.stripe]\ntype = "stripe"\napi_key = "\${STRIPE_API_KEY}"\nbase_url = "${stripe.url}"\n\n[[operators]]\nname = "alice"\npublic_key = "${alice.publicKey}"\n\n[[policy.rules]]\nname = "big-refunds"\ntarget = "stripe"\nwhen = [{ arg = "amount", above = "1000" }]\n`
    writeFileSync(join(dir, 'interlock.toml'), toml)
    const env = { STRIPE_API_KEY: STRIPE_KEY }
    const config = parseConfig(toml, { file: join(dir, 'interlock.toml'), env })
    const store = await openStore(config.store)
    const targets = createTargets(config.targets)
    const outbox = new Outbox({ store, targets: targets.values(), pollMs: 20 })
    const spans = join(dir, 'relay-spans.jsonl')
    const relay = startRelayProc('relay-t', ['--poll-ms', '20'], dir, { ...env, NODE_OPTIONS: `--import ${REGISTER}`, INTERLOCK_TEST_SPANS: spans, OTEL_SERVICE_NAME: 'interlock-relay' })
    try {
      await relayReady(relay)
      const handle = await trace.getTracer('agent').startActiveSpan('agent.tool_call', async (span) => {
        try {
          return await outbox.submit({ thread: 'traced-run', target: 'stripe', action: 'refund', args: { charge: 'ch_3TracedChargeForTheRelay', amount: '2500.00', currency: 'usd' } })
        } finally {
          span.end()
        }
      })
      const submit = exporter.getFinishedSpans().find((s) => s.name === 'interlock.submit')!
      await until('HELD', async () => (await store.get(handle.effectId))?.state === 'HELD')
      await releaseEffect({ store, operators: config.operators, policy: new RulesPolicy(config.policy.rules), key: alice, clock: systemClock }, handle.effectId)
      await until('COMMITTED', async () => (await store.get(handle.effectId))?.state === 'COMMITTED')
      const theirs = await until('the relay\'s spans of the send', () => {
        const s = spansIn(spans).filter((x) => x.name === 'interlock.relay.effect' && x.attributes['interlock.effect_id'] === handle.effectId)
        return s.length >= 2 && spansIn(spans).some((x) => x.name === 'interlock.commit') ? s : undefined
      })
      // The hold and the send, each a child of the agent's submit span, in its trace.
      for (const s of theirs) {
        expect(s.traceId).toBe(submit.spanContext().traceId)
        expect(s.parentSpanId).toBe(submit.spanContext().spanId)
        expect(s.service).toBe('interlock-relay')
      }
      expect(theirs.map((s) => s.attributes['interlock.found'])).toEqual(['PROPOSED', 'AUTHORIZED'])
      const send = theirs[1]!
      const underSend = spansIn(spans).filter((x) => x.parentSpanId === send.spanId).map((x) => x.name)
      expect(underSend).toEqual(expect.arrayContaining(['interlock.premises', 'interlock.dispatch', 'interlock.commit']))
      const all = exported(spansIn(spans))
      expect(all).not.toContain(STRIPE_KEY)
      expect(all).not.toContain('ch_3TracedChargeForTheRelay')
    } finally {
      relay.child.kill('SIGTERM')
      await relay.exited
      await outbox.close()
      for (const t of targets.values()) await t.close?.()
      await store.close()
    }
  })

  it('an MCP call carrying traceparent in _meta: mcp-proxy\'s span is its child, and the submit and send are in that trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-traced-mcp-'))
    dirs.push(dir)
    writeFileSync(join(dir, 'interlock.toml'), memoryToml(dir, { extra: '[targets.memory.tools.create_entities]\ntier = 1\n' }))
    const spans = join(dir, 'proxy-spans.jsonl')
    const proxy = await proxyClient({ cwd: dir, env: { NODE_OPTIONS: `--import ${REGISTER}`, INTERLOCK_TEST_SPANS: spans, OTEL_SERVICE_NAME: 'interlock-mcp-proxy' } })
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    const parent = '00f067aa0ba902b7'
    try {
      const result = await proxy.client.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'traced', entityType: 'person', observations: [] }] }, _meta: { traceparent: `00-${traceId}-${parent}-01` } })
      expect(result.isError).toBeFalsy()
      const call = await until('the proxy\'s call span', () => spansIn(spans).find((s) => s.name === 'interlock.mcp.call'))
      expect(call.traceId).toBe(traceId)
      expect(call.parentSpanId).toBe(parent)
      expect(call.attributes).toMatchObject({ 'interlock.tool': 'create_entities', 'interlock.target': 'memory' })
      const submit = await until('the submit span', () => spansIn(spans).find((s) => s.name === 'interlock.submit'))
      expect(submit.traceId).toBe(traceId)
      expect(submit.parentSpanId).toBe(call.spanId)
      expect(spansIn(spans).filter((s) => s.name === 'interlock.dispatch').every((s) => s.traceId === traceId)).toBe(true)
      expect(exported(spansIn(spans))).not.toContain('"traced"')
      // A read tool's call is forwarded, not journaled: its span too is in the caller's trace.
      await proxy.client.callTool({ name: 'read_graph', arguments: {}, _meta: { traceparent: `00-${traceId}-${parent}-01` } })
      const read = await until('the forwarded call\'s span', () => spansIn(spans).find((s) => s.name === 'interlock.mcp.call' && s.attributes['interlock.journaled'] === false))
      expect(read).toMatchObject({ traceId, parentSpanId: parent, attributes: { 'interlock.tool': 'read_graph' } })
    } finally {
      await proxy.close()
    }
  })
})
