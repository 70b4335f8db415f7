/** planAppend's shortcut for a proposal's text must be byte for byte what canonicalJson writes: the hash chain covers it. */
import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../src/core/canonical-json.js'
import { toEffect } from '../../../src/core/effect.js'
import { effectJson, planAppend, recordData } from '../../../src/core/stores/append-plan.js'
import { GENESIS_HASH, type AppendRequest } from '../../../src/core/stores/store.js'
import { proposal } from '../../../src/core/gate-context.js'

const e = toEffect({ thread: 't1', target: 'svc', action: 'do', args: { b: [1, -0, 'e\u0301'], a: { z: null, y: true } }, premises: { seen: 2 }, key: 'k' })

describe('planAppend: a proposal', () => {
  it.each<[string, AppendRequest['data']]>([
    ['proposed by the gate ({ effect, tier })', proposal(e, 3)],
    ['with no data', {}],
    ['with data of its own', { reason: 'x', zeta: 1 }],
  ])('%s: record text and effect text are canonicalJson of the record data and of the effect', (_, data) => {
    const req: AppendRequest = { effectId: e.id, from: null, to: 'PROPOSED', data, effect: e, tier: 3 }
    const plan = planAppend([req], new Map(), new Map([[e.thread, { seq: 0, hash: GENESIS_HASH }]]), '2030-01-01T00:00:00.000Z')
    expect(plan.records[0]!.dataText).toBe(canonicalJson(recordData(req)))
    expect(plan.effects[0]!.effectText).toBe(canonicalJson(effectJson(e)))
  })
})
