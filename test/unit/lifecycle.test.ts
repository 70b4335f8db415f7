import { describe, expect, it } from 'vitest'
import { IllegalTransitionError } from '../../src/core/errors.js'
import { assertTransition, canTransition, STATES, TERMINAL_STATES, TRANSITIONS } from '../../src/core/lifecycle.js'

describe('lifecycle table', () => {
  it('allows exactly the transitions of the design', () => {
    const allowed = STATES.flatMap((from) => STATES.filter((to) => canTransition(from, to)).map((to) => `${from}>${to}`))
    expect(allowed.sort()).toEqual(
      [
        'PROPOSED>HELD', 'PROPOSED>AUTHORIZED', 'PROPOSED>REJECTED',
        'HELD>HELD', 'HELD>AUTHORIZED', 'HELD>REJECTED',
        'AUTHORIZED>DISPATCHED', 'AUTHORIZED>REJECTED', 'AUTHORIZED>HELD',
        'DISPATCHED>COMMITTED', 'DISPATCHED>FAILED', 'DISPATCHED>REJECTED', 'DISPATCHED>AMBIGUOUS',
        // Returned: the target did not apply it; premises are re-checked before it is sent again.
        'DISPATCHED>AUTHORIZED',
        'AMBIGUOUS>COMMITTED', 'AMBIGUOUS>FAILED', 'AMBIGUOUS>DISPATCHED',
      ].sort(),
    )
  })

  it('lets nothing out of a terminal state', () => {
    for (const s of TERMINAL_STATES) expect(TRANSITIONS[s]).toEqual([])
  })

  it('creates effects only as PROPOSED', () => {
    for (const s of STATES) expect(canTransition(null, s)).toBe(s === 'PROPOSED')
  })

  it('names both states in an illegal transition', () => {
    for (const from of STATES) {
      for (const to of STATES) {
        if (canTransition(from, to)) continue
        expect(() => assertTransition(from, to, 'abc')).toThrow(IllegalTransitionError)
        expect(() => assertTransition(from, to, 'abc')).toThrow(`${from} → ${to}`)
      }
    }
  })
})
