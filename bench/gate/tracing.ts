/**
 * bench/gate/tracing: what Interlock's spans cost on the gate's sequential
 * path (gate.submit to a no-op tier-1 target, SQLite journal, fsync on).
 *
 * In one run, in alternating slices so load falls on all alike:
 *   (off)  the tracing code bypassed (setTracingEnabled(false)): the baseline;
 *   (api)  @opentelemetry/api alone, no SDK: what every user without tracing runs;
 * then, once the SDK is registered (it cannot be unregistered mid-run):
 *   (sdk)  the OTel SDK's tracer provider with a no-op exporter: every span made.
 * Reports api ÷ off (goal: within noise, ~1.0) and what the SDK adds per
 * effect in microseconds, (1/sdk − 1/api).
 *
 *   npx tsx bench/gate/tracing.ts [--seconds 3] [--rounds 4]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { Gate } from '../../src/core/gate.js'
import { openStore } from '../../src/core/stores/open.js'
import type { EffectTarget } from '../../src/core/targets/target.js'
import { setTracingEnabled } from '../../src/core/tracing/spans.js'

const args = process.argv.slice(2)
const seconds = Number(args[args.indexOf('--seconds') + 1] || 0) || 3
const rounds = Number(args[args.indexOf('--rounds') + 1] || 0) || 4

const noop: EffectTarget = { name: 'noop', tier: 1, validatePremises: async () => [], apply: async (e) => ({ ok: e.id }) }

async function slice(tag: string, ms: number): Promise<{ n: number; ms: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-tracing-'))
  const store = await openStore({ kind: 'sqlite', path: join(dir, 'journal.db') })
  const gate = new Gate({ store, targets: [noop] })
  let n = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    await gate.submit({ thread: `bench-${tag}`, target: 'noop', action: 'x', args: { n: n++ } })
  }
  const took = performance.now() - start
  await gate.close()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
  return { n, ms: took }
}

const rate = (r: { n: number; ms: number }[]) => r.reduce((a, x) => a + x.n, 0) / (r.reduce((a, x) => a + x.ms, 0) / 1000)

const off: { n: number; ms: number }[] = []
const api: { n: number; ms: number }[] = []
await slice('warm', 500)
for (let i = 0; i < rounds; i++) {
  setTracingEnabled(false)
  off.push(await slice('off', (seconds * 1000) / 2))
  setTracingEnabled(true)
  api.push(await slice('api', (seconds * 1000) / 2))
}
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: { export: (_s, done) => done({ code: 0 }), shutdown: async () => {} } })] }))
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
const sdk: { n: number; ms: number }[] = []
for (let i = 0; i < rounds; i++) sdk.push(await slice('sdk', (seconds * 1000) / 2))

const [rOff, rApi, rSdk] = [rate(off), rate(api), rate(sdk)]
console.log(`tracing code bypassed: ${rOff.toFixed(0)} effects/s`)
console.log(`API alone, no SDK:     ${rApi.toFixed(0)} effects/s`)
console.log(`SDK, no-op exporter:   ${rSdk.toFixed(0)} effects/s`)
console.log(`api ÷ off: ${(rApi / rOff).toFixed(3)}; the SDK adds ${((1 / rSdk - 1 / rApi) * 1e6).toFixed(0)} µs per effect (${(rSdk / rApi).toFixed(3)} × api)`)
