/**
 * gate.recover(options), as reconcile-effects uses it: grace period, limit,
 * bounded concurrency per target, dry run, filter. On a real SQLite journal.
 */
import { describe, expect, it } from 'vitest'
import { toEffect, type Tier } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { proposal } from '../../src/core/gate-context.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import { CountingTarget } from '../helpers/counting-target.js'

async function dispatched(store: Store, target: string, tier: Tier, n: number): Promise<string> {
  const effect = toEffect({ thread: `t-${target}`, target, action: 'a', args: { n } })
  await store.append([
    { effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, tier), effect, tier },
    { effectId: effect.id, from: 'PROPOSED', to: 'AUTHORIZED', data: {} },
    { effectId: effect.id, from: 'AUTHORIZED', to: 'DISPATCHED', data: {} },
  ])
  return effect.id
}

async function setUp(): Promise<{ store: Store; a: CountingTarget; b: CountingTarget; ids: string[] }> {
  const store = await openStore({ kind: 'sqlite', path: ':memory:' })
  const a = new CountingTarget('a', 1)
  const b = new CountingTarget('b', 3)
  const ids: string[] = []
  for (let n = 0; n < 4; n++) ids.push(await dispatched(store, 'a', 1, n))
  ids.push(await dispatched(store, 'b', 3, 9))
  return { store, a, b, ids }
}

describe('gate.recover options', () => {
  it('dry run: plans by the table, changes nothing, sends nothing', async () => {
    const { store, a, b, ids } = await setUp()
    const report = await new Gate({ store, targets: [a, b] }).recover({ dryRun: true })
    expect(report.dryRun).toBe(true)
    expect(report.effects.map((e) => [e.plan, e.action])).toEqual([...Array(4).fill(['re-apply', 'planned']), ['mark-ambiguous', 'planned']])
    expect(a.calls.size + b.calls.size).toBe(0)
    for (const id of ids) expect((await store.get(id))!.state).toBe('DISPATCHED')
  })

  it('grace period: effects younger than olderThanMs are left alone', async () => {
    const { store, a, b } = await setUp()
    const report = await new Gate({ store, targets: [a, b] }).recover({ olderThanMs: 60_000 })
    expect(report.skipped.recent).toBe(5)
    expect(report.effects).toEqual([])
    const later = await new Gate({ store, targets: [a, b] }).recover({ olderThanMs: 60_000, now: () => Date.now() + 120_000 })
    expect(later.effects).toHaveLength(5)
  })

  it('limit and filter: acts on the oldest allowed; the rest are counted, not touched', async () => {
    const { store, a, b, ids } = await setUp()
    const report = await new Gate({ store, targets: [a, b] }).recover({ limit: 2, filter: (s) => s.effect.id !== ids[0] })
    expect(report.skipped).toMatchObject({ filtered: 1, deferred: 2 })
    expect(report.effects.map((e) => e.effectId)).toEqual([ids[1], ids[2]])
    expect(a.count(ids[0]!) + a.count(ids[3]!)).toBe(0)
  })

  it('concurrency per target: never more than asked on one target, targets side by side', async () => {
    const { store, a, b } = await setUp()
    let now = 0
    let most = 0
    a.onApply = async () => {
      most = Math.max(most, ++now)
      await new Promise((r) => setTimeout(r, 20))
      now--
    }
    const report = await new Gate({ store, targets: [a, b] }).recover({ concurrency: 2 })
    expect(most).toBe(2)
    expect(report.counts).toEqual({ committed: 4, ambiguous: 1 })
  })
})
