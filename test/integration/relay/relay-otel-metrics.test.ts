/**
 * The relay's /metrics as OpenTelemetry metrics: a relay on a real SQLite
 * outbox drains effects to a real HTTP service (committed, held by a rule,
 * AMBIGUOUS after a lost answer, one refused and held again), and the SDK's
 * MeterProvider, given to the relay, collects the same numbers /metrics
 * shows: every family, every label, every value, names converted by the
 * OpenTelemetry-to-Prometheus rules. Once the relay stops, the SDK reads it
 * no more. And a relay built without a provider reports to the global one
 * an SDK's setup registers.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { metrics } from '@opentelemetry/api'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PolicyRuleConfig, TargetConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { toEffect } from '../../../src/core/effect.js'
import { proposal } from '../../../src/core/gate-context.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import { createTargets } from '../../../src/core/targets/registry.js'
import { startHttpService, type HttpService } from '../../helpers/http-service.js'
import { asExposition, CollectingReader, parseExposition, sampleDifferences, sampleKey } from '../../helpers/relay-metrics.js'

const key = generateKeyPair('relay', 'otel-metrics')
const RULE: PolicyRuleConfig = { name: 'large-payments', target: 'pay', when: [{ arg: 'amount', above: '500.00' }], quorum: 1, releaseTtlMs: 3_600_000 }
const VERSION = (JSON.parse(readFileSync(join(import.meta.dirname, '../../../package.json'), 'utf8')) as { version: string }).version

let dir: string
let service: HttpService
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-otel-metrics-'))
  service = await startHttpService()
})
afterAll(async () => {
  await service?.close()
  rmSync(dir, { recursive: true, force: true })
})

function targets() {
  const http = (tier: 1 | 3, path: string): TargetConfig => ({ type: 'http', tier, url: `${service.url}${path}`, method: 'POST', headers: {}, timeoutMs: 3_000, connectTimeoutMs: 1_000 })
  return createTargets({ pay: http(1, '/idempotent'), mail: http(3, '/plain') }).values()
}

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: () => string): Promise<void> {
  const end = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what()}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe('the relay metrics through OpenTelemetry', () => {
  it("an SDK's MeterProvider collects what /metrics shows, family for family, label for label; after stop() the relay is read no more", async () => {
    service.reset()
    const store = await openStore({ kind: 'sqlite', path: join(dir, 'outbox.db') }, { autoInstall: true })
    const outbox = new Outbox({ store, targets: targets() })
    const policy = new RulesPolicy([RULE])
    const reader = new CollectingReader()
    const provider = new MeterProvider({ readers: [reader] })
    try {
      for (const amount of ['10.00', '20.00', '900.00']) await outbox.submit({ thread: `pay-${amount}`, target: 'pay', action: 'charge', args: { amount } })
      // What an agent with write access can journal by itself: AUTHORIZED though the rule holds it (refused, held again).
      const forged = toEffect({ thread: 'pay-forged', target: 'pay', action: 'charge', args: { amount: '950.00' } })
      const appended = await store.append([
        { effectId: forged.id, from: null, to: 'PROPOSED', data: proposal(forged, 1), effect: forged, tier: 1 },
        { effectId: forged.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
      ])
      expect(appended.every((a) => a.ok)).toBe(true)
      // The mail's answer is lost after the service applied it: tier 3, AMBIGUOUS.
      service.setFault({ kind: 'drop', afterApply: true }, { path: '/plain', times: 1 })
      await outbox.submit({ thread: 'mail-1', target: 'mail', action: 'send', args: { to: 'ops' } })

      const relay = new Relay({
        store,
        targets: targets(),
        relayId: 'otel-relay',
        key,
        policy,
        healthPort: 0,
        meterProvider: provider,
        pollMs: 50,
        leaseMs: 1_500,
        retry: { maxAttempts: 1, backoffMs: 0 },
      })
      await relay.start()
      const m = relay.metrics
      try {
        await until(() => m.total() === 5 && m.inFlight === 0 && m.waiting?.HELD === 2 && m.waiting.AMBIGUOUS === 1, 20_000, () => `five outcomes and the waiting counted: ${JSON.stringify(relay.stats())}, waiting ${JSON.stringify(m.waiting)}`)
        const url = `http://127.0.0.1:${relay.healthPort}/metrics`
        const scrape = async () => parseExposition(await (await fetch(url)).text())

        // The relay keeps heartbeating and polling: compare a scrape and a collection taken between two of its steps.
        const take = async () => {
          const prom = await scrape()
          return { prom, otel: asExposition((await reader.collect()).resourceMetrics, 'agent-interlock') }
        }
        let { prom, otel } = await take()
        let diff = sampleDifferences(prom.samples, otel.samples)
        for (let tries = 1; diff.length > 0 && tries < 40; tries++) {
          ;({ prom, otel } = await take())
          diff = sampleDifferences(prom.samples, otel.samples)
        }
        expect(diff).toEqual([])
        // Every family /metrics declares, of the same type, and no other.
        expect(Object.fromEntries(otel.types)).toEqual(Object.fromEntries(prom.types))
        expect(prom.types.size).toBe(13)
        expect(otel.scopes).toContainEqual({ name: 'agent-interlock', version: VERSION })

        // The numbers are this run's, not zeros on both sides.
        const at = (name: string, labels: Record<string, string>) => otel.samples.get(sampleKey(name, { relay: 'otel-relay', ...labels }))
        expect(at('interlock_relay_effects_total', { target: 'pay', status: 'committed' })).toBe(2)
        expect(at('interlock_relay_effects_total', { target: 'pay', status: 'held' })).toBe(2)
        expect(at('interlock_relay_effects_total', { target: 'mail', status: 'ambiguous' })).toBe(1)
        expect(at('interlock_relay_effects_refused_total', { target: 'pay', reason: 'unauthorized' })).toBe(1)
        expect(at('interlock_relay_effects_waiting', { state: 'HELD' })).toBe(2)
        expect(at('interlock_relay_effects_waiting', { state: 'AMBIGUOUS' })).toBe(1)
        expect(at('interlock_relay_claimed_total', {})).toBeGreaterThanOrEqual(5)
        expect(at('interlock_relay_in_flight', {})).toBe(0)
        expect(at('interlock_relay_store_duration_seconds_count', { operation: 'claim' })).toBeGreaterThan(0)
        expect(at('interlock_relay_store_duration_seconds_count', { operation: 'countByState' })).toBeGreaterThan(0)
        expect(at('interlock_relay_store_duration_seconds_bucket', { operation: 'append', le: '+Inf' })).toBe(at('interlock_relay_store_duration_seconds_count', { operation: 'append' }))
      } finally {
        await relay.stop()
      }

      // Unregistered: what the relay counts from now on is not read.
      const before = asExposition((await reader.collect()).resourceMetrics, 'agent-interlock').samples
      m.claimed += 1_000
      m.storeCall('claim', 0.5)
      expect(m.storeCallListener).toBeUndefined()
      const after = asExposition((await reader.collect()).resourceMetrics, 'agent-interlock').samples
      const claimed = sampleKey('interlock_relay_claimed_total', { relay: 'otel-relay' })
      expect(after.get(claimed)).toBe(before.get(claimed))
      expect(after.get(claimed)).toBeLessThan(1_000)
      const claims = sampleKey('interlock_relay_store_duration_seconds_count', { relay: 'otel-relay', operation: 'claim' })
      expect(after.get(claims)).toBe(before.get(claims))
    } finally {
      await provider.shutdown()
      await outbox.close()
      await store.close()
    }
  })

  it('a relay built without a meter provider reports to the global one, which an SDK registers', async () => {
    service.reset()
    const store = await openStore({ kind: 'sqlite', path: join(dir, 'global.db') }, { autoInstall: true })
    const outbox = new Outbox({ store, targets: targets() })
    const reader = new CollectingReader()
    const provider = new MeterProvider({ readers: [reader] })
    expect(metrics.setGlobalMeterProvider(provider)).toBe(true)
    try {
      const sent = await outbox.submit({ thread: 'pay-global', target: 'pay', action: 'charge', args: { amount: '5.00' } })
      const relay = new Relay({ store, targets: targets(), relayId: 'global-relay', key, policy: new RulesPolicy([]), pollMs: 50, leaseMs: 1_500 })
      await relay.start()
      try {
        expect(await sent.result()).toMatchObject({ status: 'committed' })
        await until(() => relay.metrics.total() === 1, 10_000, () => 'the outcome counted')
        const otel = asExposition((await reader.collect()).resourceMetrics, 'agent-interlock')
        expect(otel.samples.get(sampleKey('interlock_relay_effects_total', { relay: 'global-relay', target: 'pay', status: 'committed' }))).toBe(1)
      } finally {
        await relay.stop()
      }
    } finally {
      metrics.disable()
      await provider.shutdown()
      await outbox.close()
      await store.close()
    }
  })
})
