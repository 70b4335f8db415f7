/**
 * deploy/grafana/interlock-relay.json against what a relay really exports:
 * a relay on a real SQLite outbox works on a few effects (one committed, one
 * refused and held again) and serves /metrics; every metric the dashboard's
 * PromQL (panels and template variables) names must be a family of its
 * `# TYPE` lines (or a histogram's `_bucket`/`_sum`/`_count`), and every label
 * it matches or groups by must be one those samples carry. A dashboard that
 * names a metric or label the relay does not export fails, which the checker
 * is shown to catch on altered copies. Then the JSON's shape: an importable
 * dashboard (its one input `${DS_PROMETHEUS}`, every panel an id, a gridPos in
 * the 24-column grid not overlapping another, targets on that datasource).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PolicyRuleConfig } from '../../../src/core/config/types.js'
import { generateKeyPair } from '../../../src/core/crypto/keys.js'
import { toEffect } from '../../../src/core/effect.js'
import { proposal } from '../../../src/core/gate-context.js'
import { Outbox } from '../../../src/core/outbox/outbox.js'
import { RulesPolicy } from '../../../src/core/policy/rules.js'
import { Relay } from '../../../src/core/relay/relay.js'
import { openStore } from '../../../src/core/stores/open.js'
import { CountingTarget } from '../../helpers/counting-target.js'
import { parseExposition, type PromType } from '../../helpers/relay-metrics.js'

const DASHBOARD_FILE = join(import.meta.dirname, '../../../deploy/grafana/interlock-relay.json')
const DS = '${DS_PROMETHEUS}'

interface Target {
  refId?: unknown
  expr?: unknown
  datasource?: { type?: unknown; uid?: unknown }
}
interface Panel {
  id?: unknown
  type?: unknown
  title?: unknown
  gridPos?: { x?: unknown; y?: unknown; w?: unknown; h?: unknown }
  datasource?: { type?: unknown; uid?: unknown }
  targets?: Target[]
  panels?: Panel[]
}
interface Dashboard {
  __inputs?: { name?: unknown; type?: unknown; pluginId?: unknown }[]
  uid?: unknown
  title?: unknown
  schemaVersion?: unknown
  panels?: Panel[]
  templating?: { list?: { name?: unknown; type?: unknown; datasource?: { uid?: unknown }; query?: unknown; definition?: unknown }[] }
}

/** What a relay exports: each family's type, and the label names its samples carry. */
interface Exported {
  types: Map<string, PromType>
  labels: Map<string, Set<string>>
}

const dashboardText = readFileSync(DASHBOARD_FILE, 'utf8')
const dashboard = JSON.parse(dashboardText) as Dashboard

/** Every panel, rows' nested ones included. */
function allPanels(d: Dashboard): Panel[] {
  return (d.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])])
}

/** Every PromQL expression: the panels' targets, and the template variables' label_values(…) queries. */
function expressions(d: Dashboard): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = []
  for (const p of allPanels(d)) for (const t of p.targets ?? []) out.push({ where: `panel ${String(p.id)} "${String(p.title)}" ${String(t.refId)}`, expr: String(t.expr) })
  for (const v of d.templating?.list ?? []) {
    if (v.type !== 'query') continue
    const q = typeof v.query === 'string' ? v.query : String((v.query as { query?: unknown } | undefined)?.query ?? v.definition)
    out.push({ where: `variable $${String(v.name)}`, expr: q })
  }
  return out
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'and', 'or', 'unless', 'inf', 'nan'])

/**
 * The metric names, matched label names and grouping labels of one PromQL
 * expression (or a Grafana `label_values(metric, label)`): strings, label
 * matchers, ranges and label lists are set aside, then every identifier not
 * called as a function and not a keyword is a metric name.
 */
function promqlNames(expr: string): { metrics: string[]; matched: [string, string][]; grouped: string[] } {
  const lv = /^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/.exec(expr)
  if (lv) return { metrics: [lv[1]!], matched: [], grouped: [lv[2]!] }
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
  const matched: [string, string][] = []
  for (const s of noStrings.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g)) {
    for (const l of s[2]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) matched.push([s[1]!, l[1]!])
  }
  const grouped: string[] = []
  for (const g of noStrings.matchAll(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g)) {
    grouped.push(...g[1]!.split(',').map((l) => l.trim()).filter(Boolean))
  }
  const bare = noStrings
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
  const metrics: string[] = []
  for (const t of bare.matchAll(/\d[\d.]*(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?|([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (!t[1] || t[2] || KEYWORDS.has(t[1].toLowerCase())) continue
    metrics.push(t[1])
  }
  return { metrics, matched, grouped }
}

/** The family a sample name belongs to: itself, or a histogram's (or summary's) for its _bucket, _sum, _count. */
function familyOf(name: string, types: Map<string, PromType>): string | undefined {
  if (types.has(name)) return name
  const m = /^(.*)_(bucket|sum|count)$/.exec(name)
  if (!m) return undefined
  const t = types.get(m[1]!)
  if (t === 'histogram' || (t === 'summary' && m[2] !== 'bucket')) return m[1]
  return undefined
}

/** Labels of a sample name as exported (`le` only on a histogram's buckets). */
function labelsOf(name: string, exported: Exported): Set<string> {
  const family = familyOf(name, exported.types)!
  const labels = new Set(exported.labels.get(family) ?? [])
  if (exported.types.get(family) === 'histogram' && !name.endsWith('_bucket')) labels.delete('le')
  return labels
}

/** What in the dashboard the relay does not export: unknown metrics, labels no sample of theirs carries. */
function problems(d: Dashboard, exported: Exported): string[] {
  const out: string[] = []
  for (const { where, expr } of expressions(d)) {
    const names = promqlNames(expr)
    if (names.metrics.length === 0) out.push(`${where}: names no metric: ${expr}`)
    const unknown = names.metrics.filter((m) => !familyOf(m, exported.types))
    for (const m of unknown) out.push(`${where}: ${m} is not a metric the relay exports`)
    // Its labels cannot be judged then: one problem, not a cascade.
    if (unknown.length > 0) continue
    for (const [metric, label] of names.matched) if (!labelsOf(metric, exported).has(label)) out.push(`${where}: ${metric} has no label ${label}`)
    const labels = new Set(names.metrics.flatMap((m) => [...labelsOf(m, exported)]))
    for (const label of names.grouped) if (!labels.has(label)) out.push(`${where}: no metric of the expression has the label ${label} it groups by`)
  }
  return out
}

const key = generateKeyPair('relay', 'grafana-dashboard')
const RULE: PolicyRuleConfig = { name: 'large-payments', target: 'pay', when: [{ arg: 'amount', above: '500.00' }], quorum: 1, releaseTtlMs: 3_600_000 }
let dir: string
let exported: Exported

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'interlock-dashboard-'))
  const store = await openStore({ kind: 'sqlite', path: join(dir, 'outbox.db') }, { autoInstall: true })
  const pay = new CountingTarget('pay', 1)
  const outbox = new Outbox({ store, targets: [pay] })
  const relay = new Relay({ store, targets: [pay], relayId: 'dashboard-relay', key, policy: new RulesPolicy([RULE]), healthPort: 0, pollMs: 50, leaseMs: 1_500 })
  try {
    await outbox.submit({ thread: 'small', target: 'pay', action: 'charge', args: { amount: '10.00' } })
    // Journaled AUTHORIZED though the rule holds it: refused (a refusal sample with its reason), held again.
    const forged = toEffect({ thread: 'forged', target: 'pay', action: 'charge', args: { amount: '950.00' } })
    await store.append([
      { effectId: forged.id, from: null, to: 'PROPOSED', data: proposal(forged, 1), effect: forged, tier: 1 },
      { effectId: forged.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
    ])
    await relay.start()
    await until(() => relay.metrics.total() === 2 && relay.metrics.waiting?.HELD === 1, 20_000, 'the two effects finished and the HELD one counted')
    const { types, samples } = parseExposition(await (await fetch(`http://127.0.0.1:${relay.healthPort}/metrics`)).text())
    const labels = new Map<string, Set<string>>()
    for (const k of samples.keys()) {
      const [, name, body] = /^([^{]+)\{(.*)\}$/.exec(k)!
      const family = familyOf(name!, types)!
      const set = labels.get(family) ?? new Set<string>()
      for (const l of body!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) set.add(l[1]!)
      labels.set(family, set)
    }
    exported = { types, labels }
  } finally {
    await relay.stop()
    await outbox.close()
    await store.close()
  }
})
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

describe('deploy/grafana/interlock-relay.json', () => {
  it('names only metrics, and labels, that a running relay exports on /metrics', () => {
    const named = new Set(expressions(dashboard).flatMap((e) => promqlNames(e.expr).metrics.map((m) => familyOf(m, exported.types) ?? m)))
    expect(problems(dashboard, exported)).toEqual([])
    // What the dashboard is for: throughput by outcome, in flight, HELD and AMBIGUOUS waiting, refusals, store errors and latency, notices.
    for (const family of [
      'interlock_relay_effects_total',
      'interlock_relay_in_flight',
      'interlock_relay_effects_waiting',
      'interlock_relay_effects_refused_total',
      'interlock_relay_store_errors_total',
      'interlock_relay_store_duration_seconds',
      'interlock_relay_notices_total',
      'interlock_relay_notify_errors_total',
    ]) {
      expect(named, family).toContain(family)
    }
    // Every family the relay exports has a place on it.
    expect([...exported.types.keys()].filter((f) => !named.has(f))).toEqual([])
  })

  it('the check fails a dashboard naming a metric or a label the relay does not export', () => {
    const renamed = JSON.parse(dashboardText.replaceAll('interlock_relay_in_flight', 'interlock_relay_inflight')) as Dashboard
    const found = problems(renamed, exported)
    expect(found.length).toBeGreaterThan(0)
    expect(found.every((p) => p.includes('interlock_relay_inflight is not a metric the relay exports'))).toBe(true)
    expect(problems(JSON.parse(dashboardText.replace('sum by (status)', 'sum by (outcome)')) as Dashboard, exported)).toEqual([expect.stringContaining('groups by')])
    expect(problems(JSON.parse(dashboardText.replace('state=\\"HELD\\"', 'status=\\"HELD\\"')) as Dashboard, exported)).toEqual([expect.stringContaining('interlock_relay_effects_waiting has no label status')])
    expect(promqlNames('histogram_quantile(0.99, sum by (le, operation) (rate(x_bucket{relay=~"$relay"}[$__rate_interval]))) / 1e3 and on (relay) y offset 5m')).toEqual({
      metrics: ['x_bucket', 'y'],
      matched: [['x_bucket', 'relay']],
      grouped: ['le', 'operation', 'relay'],
    })
  })

  it('is an importable dashboard: one input ${DS_PROMETHEUS}, panels with unique ids and a gridPos each, not overlapping, queries on that datasource', () => {
    expect(typeof dashboard.uid).toBe('string')
    expect(typeof dashboard.title).toBe('string')
    expect(typeof dashboard.schemaVersion).toBe('number')
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })])
    // Grafana asks on import for each ${…} the file names: only the declared input.
    expect(new Set([...dashboardText.matchAll(/\$\{([^}]+)\}/g)].map((m) => m[1]))).toEqual(new Set(['DS_PROMETHEUS']))

    const panels = allPanels(dashboard)
    expect(panels.length).toBeGreaterThan(5)
    const ids = panels.map((p) => p.id)
    expect(ids.every((id) => Number.isInteger(id) && (id as number) > 0)).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
    const boxes = panels.map((p) => {
      const g = p.gridPos ?? {}
      for (const k of ['x', 'y', 'w', 'h'] as const) expect(Number.isInteger(g[k]), `panel ${String(p.id)} gridPos.${k}`).toBe(true)
      const [x, y, w, h] = [g.x, g.y, g.w, g.h] as number[]
      expect(x >= 0 && y >= 0 && w >= 1 && h >= 1 && x + w <= 24, `panel ${String(p.id)} inside the 24-column grid`).toBe(true)
      return { id: p.id, x: x!, y: y!, w: w!, h: h! }
    })
    for (const a of boxes) {
      for (const b of boxes) {
        if (a === b) continue
        const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h
        expect(overlap, `panels ${String(a.id)} and ${String(b.id)} overlap`).toBe(false)
      }
    }
    const variables = new Set((dashboard.templating?.list ?? []).map((v) => String(v.name)))
    for (const v of dashboard.templating?.list ?? []) expect(v.datasource?.uid).toBe(DS)
    for (const p of panels.filter((p) => p.type !== 'row')) {
      expect(['stat', 'timeseries', 'gauge', 'bargauge', 'table', 'text']).toContain(p.type)
      expect(p.datasource).toEqual({ type: 'prometheus', uid: DS })
      expect(p.targets?.length, `panel ${String(p.id)} has queries`).toBeGreaterThan(0)
      const refs = p.targets!.map((t) => t.refId)
      expect(new Set(refs).size).toBe(refs.length)
      for (const t of p.targets!) {
        expect(typeof t.refId).toBe('string')
        expect(typeof t.expr === 'string' && t.expr.length > 0).toBe(true)
        expect(t.datasource).toEqual({ type: 'prometheus', uid: DS })
        // Only the dashboard's own variables and Grafana's built-in ones.
        for (const m of (t.expr as string).matchAll(/\$(\w+)/g)) {
          expect(variables.has(m[1]!) || ['__rate_interval', '__range', '__interval'].includes(m[1]!), `$${m[1]} in panel ${String(p.id)}`).toBe(true)
        }
      }
    }
  })
})
