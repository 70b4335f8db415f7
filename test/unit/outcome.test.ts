/**
 * What an outcome says was done for a COMMITTED effect: 'apply' and 'query'
 * for what this call did, 'journal' for one committed before it (nothing
 * sent), keeping how it was committed then; and what a model is told of each.
 */
import { describe, expect, it } from 'vitest'
import { toEffect, type EffectSnapshot } from '../../src/core/effect.js'
import { foundAtService, journalOutcome, outcomeOf } from '../../src/core/outcome.js'
import { doneWords } from '../../src/integrations/agent/words.js'

const effect = toEffect({ thread: 't', target: 'repo', action: 'merge', args: { pr: 7 } })
const at = '2026-12-01T00:00:00.000Z'

function committed(detail: EffectSnapshot['detail']): EffectSnapshot {
  return { effect, tier: 2, state: 'COMMITTED', seq: 4, detail, createdAt: at, updatedAt: at }
}

const wording = { tool: 'merge_pr', target: 'repo', scrub: (t: string) => t }

describe('journalOutcome', () => {
  it.each([
    [{ receipt: { sha: 'abc' }, via: 'apply' }, 'apply'],
    [{ receipt: { sha: 'abc' }, via: 'query' }, 'query'],
    [{ receipt: {}, via: 'operator' }, 'operator'],
    [{ receipt: { sha: 'abc' } }, 'apply'],
  ] as const)('a COMMITTED record %j: via journal, committed by %s', (detail, by) => {
    const o = journalOutcome(committed(detail))
    expect(o).toEqual({ status: 'committed', effectId: effect.id, receipt: detail.receipt, via: 'journal', committedBy: by })
  })

  it('anything not COMMITTED reads as outcomeOf reads it', () => {
    const failed: EffectSnapshot = { ...committed({ reason: 'refused' }), state: 'FAILED' }
    expect(journalOutcome(failed)).toEqual(outcomeOf(failed))
    expect(journalOutcome(failed)).toEqual({ status: 'failed', effectId: effect.id, reason: 'refused' })
  })

  it("outcomeOf keeps the record's own via, for the call that wrote it or waited for it", () => {
    expect(outcomeOf(committed({ receipt: {}, via: 'query' }))).toMatchObject({ via: 'query' })
    expect(outcomeOf(committed({ receipt: {}, via: 'apply' }))).toMatchObject({ via: 'apply' })
  })
})

describe('what a model is told of a COMMITTED effect found in the journal', () => {
  it("one a query found says the service's own record shows it; one applied before gives its result then", () => {
    const byQuery = journalOutcome(committed({ receipt: { merged: true }, via: 'query' }))
    const byApply = journalOutcome(committed({ receipt: { sha: 'abc' }, via: 'apply' }))
    if (byQuery.status !== 'committed' || byApply.status !== 'committed') throw new Error('expected committed')
    expect(foundAtService(byQuery)).toBe(true)
    expect(foundAtService(byApply)).toBe(false)
    expect(doneWords(byQuery, false, wording).text).toContain("repo's own record shows it")
    expect(doneWords(byApply, false, wording).text).toContain('Result then: {"sha":"abc"}')
  })
})
