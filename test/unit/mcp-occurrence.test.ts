/**
 * Which effect an MCP tool call is (integrations/mcp/occurrence.ts): the
 * same call made again is a retry or a new call by the tool's `dedupe`,
 * looking at the state of the last identical one; and the tier each tool
 * gets from its declaration or its annotations (targets/mcp/tiers.ts).
 */
import { describe, expect, it } from 'vitest'
import { effectId, type EffectSnapshot } from '../../src/core/effect.js'
import { decideTier } from '../../src/core/targets/mcp/tiers.js'
import { chooseOccurrence, type Dedupe } from '../../src/integrations/agent/occurrence.js'

const base = { thread: 't', target: 'fs', action: 'edit_file', args: { path: 'list.txt' } }
const NOW = Date.parse('2026-01-01T12:00:00Z')

function lookup(states: Record<string, { state: string; minutesAgo?: number }>, inProgress: string[] = []) {
  return {
    get: async (id: string) => {
      const s = states[id]
      return s ? ({ state: s.state, updatedAt: new Date(NOW - (s.minutesAgo ?? 0) * 60_000).toISOString() } as unknown as EffectSnapshot) : undefined
    },
    inProgress: (id: string) => inProgress.includes(id),
    now: () => NOW,
  }
}

const first = effectId({ ...base, key: undefined })
const second = effectId({ ...base, key: 'repeat-2' })
const window: Dedupe = { dedupe: 'window', dedupeWindowMs: 10 * 60_000 }

describe('chooseOccurrence', () => {
  it('a first call is the keyless effect', async () => {
    expect(await chooseOccurrence(base, { retry: false }, window, lookup({}))).toMatchObject({ id: first, key: undefined, why: 'new' })
  })

  it('"window": a retry within the window of the last COMMITTED, a new call after it', async () => {
    expect((await chooseOccurrence(base, { retry: false }, window, lookup({ [first]: { state: 'COMMITTED', minutesAgo: 9 } }))).id).toBe(first)
    expect(await chooseOccurrence(base, { retry: false }, window, lookup({ [first]: { state: 'COMMITTED', minutesAgo: 11 } }))).toMatchObject({ id: second, key: 'repeat-2' })
  })

  it('"always": a retry however late; "marked": a new call unless marked a retry', async () => {
    const late = lookup({ [first]: { state: 'COMMITTED', minutesAgo: 60 * 24 * 30 } })
    expect((await chooseOccurrence(base, { retry: false }, { dedupe: 'always', dedupeWindowMs: 0 }, late)).id).toBe(first)
    const marked: Dedupe = { dedupe: 'marked', dedupeWindowMs: 0 }
    const soon = lookup({ [first]: { state: 'COMMITTED' } })
    expect((await chooseOccurrence(base, { retry: false }, marked, soon)).id).toBe(second)
    expect((await chooseOccurrence(base, { retry: true }, marked, soon)).id).toBe(first)
  })

  it('joins an identical call in flight, HELD or AMBIGUOUS whatever the setting; a new call after REJECTED or FAILED', async () => {
    const marked: Dedupe = { dedupe: 'marked', dedupeWindowMs: 0 }
    for (const state of ['DISPATCHED', 'HELD', 'AMBIGUOUS']) expect((await chooseOccurrence(base, { retry: false }, marked, lookup({ [first]: { state } }))).id).toBe(first)
    expect((await chooseOccurrence(base, { retry: false }, marked, lookup({}, [first]))).id).toBe(first)
    for (const state of ['REJECTED', 'FAILED']) expect((await chooseOccurrence(base, { retry: false }, window, lookup({ [first]: { state } }))).id).toBe(second)
    // Marked a retry (a host replaying its conversation), it gets the first's answer again.
    expect((await chooseOccurrence(base, { retry: true }, window, lookup({ [first]: { state: 'REJECTED' } }))).id).toBe(first)
  })

  it('counts past every earlier repeat, and a caller key is always its own effect', async () => {
    const third = effectId({ ...base, key: 'repeat-3' })
    const done = lookup({ [first]: { state: 'COMMITTED', minutesAgo: 30 }, [second]: { state: 'COMMITTED', minutesAgo: 20 } })
    expect((await chooseOccurrence(base, { retry: false }, window, done)).id).toBe(third)
    expect((await chooseOccurrence(base, { key: 'k', retry: false }, window, done)).id).toBe(effectId({ ...base, key: 'k' }))
  })
})

describe('decideTier', () => {
  const declared = { tier: 2 as const, restsOn: [], dedupe: 'window' as const, dedupeWindowMs: 0 }
  it('a declaration wins over annotations; else readOnlyHint is read, idempotentHint tier 1, anything else tier 3', () => {
    expect(decideTier('x', declared, { name: 'x', annotations: { readOnlyHint: true } }).tier).toBe(2)
    expect(decideTier('x', undefined, { name: 'x', annotations: { readOnlyHint: true, idempotentHint: true } }).tier).toBe('read')
    expect(decideTier('x', undefined, { name: 'x', annotations: { idempotentHint: true } }).tier).toBe(1)
    expect(decideTier('x', undefined, { name: 'x', annotations: { destructiveHint: false } }).tier).toBe(3)
    expect(decideTier('x', undefined, { name: 'x' })).toMatchObject({ tier: 3, why: expect.stringContaining('no annotations') })
  })
})
