/**
 * Reading a relay's metrics in tests: its Prometheus exposition parsed into
 * samples and `# TYPE` lines, and an OpenTelemetry collection turned into the
 * same samples by the OpenTelemetry-to-Prometheus naming rules ('.' to '_',
 * `_seconds` for unit s, `_total` on monotonic sums, histograms as
 * `_bucket`/`_sum`/`_count`), so the two can be compared sample for sample.
 */
import { DataPointType, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics'

export type PromType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'

export interface Exposition {
  /** Metric family name → its `# TYPE`. */
  types: Map<string, PromType>
  /** `name{label="v",…}` (labels sorted) → value. */
  samples: Map<string, number>
}

/** A Prometheus text exposition (format 0.0.4). */
export function parseExposition(text: string): Exposition {
  const types = new Map<string, PromType>()
  const samples = new Map<string, number>()
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line)
    if (type) types.set(type[1]!, type[2] as PromType)
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\')
    samples.set(sampleKey(m[1]!, labels), m[3] === '+Inf' ? Infinity : Number(m[3]))
  }
  return { types, samples }
}

export function sampleKey(name: string, labels: Record<string, string | number | boolean | undefined>): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${String(labels[k])}"`)
  return `${name}{${parts.join(',')}}`
}

/** An OpenTelemetry instrument's Prometheus name, by the specification's compatibility rules. */
export function prometheusName(name: string, unit: string, monotonicSum: boolean): string {
  let n = name.replace(/[^a-zA-Z0-9_:]/g, '_')
  const suffix = unit === 's' ? 'seconds' : unit.startsWith('{') || unit === '' || unit === '1' ? '' : unit
  if (suffix && !n.endsWith(`_${suffix}`)) n += `_${suffix}`
  if (monotonicSum) n += '_total'
  return n
}

/** One collection as Prometheus would see it: `scope` limits it to one meter. */
export function asExposition(rm: ResourceMetrics, scope: string): Exposition & { scopes: { name: string; version?: string }[] } {
  const types = new Map<string, PromType>()
  const samples = new Map<string, number>()
  const scopes: { name: string; version?: string }[] = []
  for (const sm of rm.scopeMetrics) {
    scopes.push({ name: sm.scope.name, ...(sm.scope.version ? { version: sm.scope.version } : {}) })
    if (sm.scope.name !== scope) continue
    for (const m of sm.metrics) {
      const d = m.descriptor
      if (m.dataPointType === DataPointType.HISTOGRAM) {
        const name = prometheusName(d.name, d.unit, false)
        types.set(name, 'histogram')
        for (const p of m.dataPoints) {
          const labels = p.attributes as Record<string, string>
          let n = 0
          p.value.buckets.counts.forEach((c, i) => {
            n += c
            const le = i < p.value.buckets.boundaries.length ? String(p.value.buckets.boundaries[i]) : '+Inf'
            samples.set(sampleKey(`${name}_bucket`, { ...labels, le }), n)
          })
          samples.set(sampleKey(`${name}_sum`, labels), p.value.sum ?? NaN)
          samples.set(sampleKey(`${name}_count`, labels), p.value.count)
        }
        continue
      }
      const monotonic = m.dataPointType === DataPointType.SUM && m.isMonotonic
      const name = prometheusName(d.name, d.unit, monotonic)
      types.set(name, monotonic ? 'counter' : 'gauge')
      for (const p of m.dataPoints) samples.set(sampleKey(name, p.attributes as Record<string, string>), p.value as number)
    }
  }
  return { types, samples, scopes }
}

/** A reader the test collects from when it likes (no timer, no exporter). */
export class CollectingReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** Differences between two sample maps, floats compared to a relative 1e-9 (sums merged across collections). */
export function sampleDifferences(a: Map<string, number>, b: Map<string, number>): string[] {
  const out: string[] = []
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(k)
    const y = b.get(k)
    if (x === undefined || y === undefined || Math.abs(x - y) > 1e-9 * Math.max(1, Math.abs(x))) out.push(`${k}: ${x} vs ${y}`)
  }
  return out.sort()
}
