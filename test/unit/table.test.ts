/**
 * Tables on a terminal fit its width: the widest column gives way first,
 * words stay whole while they can, id columns are cut to a prefix, and only a
 * very narrow terminal leaves columns out (saying which). Off a terminal, and
 * with no width, every column is whole.
 */
import { stripVTControlCharacters } from 'node:util'
import { describe, expect, it } from 'vitest'
import { fitCell, fitColumns } from '../../src/cli/table-fit.js'
import { renderTable, type Column } from '../../src/cli/table.js'

const ID = 'a3f9c2e1b7d4058f6e2c9a1b3d5f7e9c0a2b4d6f8e1c3a5b7d9f0e2c4a6b8d0f'
const HEAD: Column[] = [{ title: 'effect', fit: 'cut' }, 'state', 'target', 'action', 'thread', 'created']
const ROWS = [
  [ID, 'COMMITTED', 'payments-eu-west-production', 'refund_partial_amount', 'support-agent/conversation-8f14e45fceea167a', '2026-12-01T22:02:00.000Z'],
  [ID.replace('a', 'b'), 'AMBIGUOUS', 'customer-notifications-email', 'send_templated_message', 'billing-agent/run-2026-12-01T22:00:00Z', '2026-12-01T22:01:59.123Z'],
]

const widthOf = (text: string) => Math.max(...stripVTControlCharacters(text).split('\n').map((l) => [...l].length))

describe('renderTable on a terminal with a width', () => {
  it.each([100, 80, 60])('no line is wider than %i columns, and every row is still there', (width) => {
    const text = renderTable(HEAD, ROWS, { tty: true, color: true, width })
    expect(widthOf(text)).toBeLessThanOrEqual(width)
    // An effect id keeps a prefix `outbox show` takes.
    expect(text).toContain(ID.slice(0, 12))
    expect(text).toContain('COMMITTED')
    expect(text).toContain('AMBIGUOUS')
  })

  it('a table that fits is left as it is', () => {
    const small = renderTable(['a', 'b'], [['x', 'y']], { tty: true, color: false, width: 100 })
    expect(small).toBe(renderTable(['a', 'b'], [['x', 'y']], { tty: true, color: false }))
  })

  it('without a width (--wide) every column is whole', () => {
    const text = renderTable(HEAD, ROWS, { tty: true, color: false })
    expect(text).toContain(ID)
    expect(text).toContain('support-agent/conversation-8f14e45fceea167a')
    expect(widthOf(text)).toBeGreaterThan(150)
  })

  it('off a terminal: whole columns, one line per row, whatever the width asked', () => {
    const text = renderTable(HEAD, ROWS, { tty: false, color: false, width: 80 })
    expect(text.split('\n')).toHaveLength(3)
    expect(text).toContain(ID)
  })

  it('a terminal too narrow for every column leaves the last ones out and says so', () => {
    const text = renderTable(HEAD, ROWS, { tty: true, color: false, width: 40 })
    expect(widthOf(text)).toBeLessThanOrEqual(40)
    expect(text.replace(/\n(?!│|┌|├|└)/g, ' ')).toMatch(/\(target, action, thread, created left out to fit 40 columns: --wide or --json shows them\)$/)
  })
})

describe('fitColumns / fitCell', () => {
  const col = (natural: number, word = natural, fit: 'wrap' | 'cut' = 'wrap') => ({ natural, title: 4, word, fit })
  const overhead = (n: number) => 3 * n + 1

  it('the widest column gives way first, and words are kept whole while they can be', () => {
    const layout = fitColumns([col(6), col(28), col(120, 30), col(90, 15)], 100, overhead)
    expect(layout.kept).toBe(4)
    expect(layout.widths.reduce((a, b) => a + b, 0) + overhead(4)).toBe(100)
    expect(layout.widths[0]).toBe(6)
    expect(layout.widths[1]).toBe(28)
    expect(layout.widths[2]).toBeGreaterThanOrEqual(30)
  })

  it('wraps at spaces, breaks a word longer than the column, and cuts an id to its prefix', () => {
    expect(fitCell('tier 1 is declared: the service', 12, 'wrap')).toEqual(['tier 1 is', 'declared:', 'the service'])
    expect(fitCell('https://example.com/a/long/path', 10, 'wrap')).toEqual(['https://ex', 'ample.com/', 'a/long/pat', 'h'])
    expect(fitCell(ID, 12, 'cut')).toEqual([ID.slice(0, 12)])
  })
})
