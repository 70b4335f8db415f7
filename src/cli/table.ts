/**
 * Tables for people (STYLE habit 8). On a terminal: boxed, bold headings,
 * and fitted to the terminal's width (table-fit.ts) unless asked for every
 * column at full width (`--wide`). Off a terminal (pipes, CI logs, files):
 * plain space-aligned columns at full width, one line per row, no escape
 * codes, so `grep`/`awk` work on the output; nothing is wrapped or cut there.
 */
import Table from 'cli-table3'
import { fitCell, fitColumns, length, type Fit } from './table-fit.js'

export type Cell = string | number | boolean | null | undefined

/** A heading, or a heading and how its column gives way when the table is too wide (default: its text wraps). */
export type Column = string | { title: string; fit: Fit }

const PLAIN_CHARS = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '', 'left-mid': '', mid: '', 'mid-mid': '',
  right: '', 'right-mid': '', middle: '  ',
}

export interface TableStyle {
  /** Boxed layout for a terminal; plain columns otherwise. */
  tty: boolean
  /** Bold headings; false when NO_COLOR is set. */
  color: boolean
  /** On a terminal: the most characters a line may take (its width); none keeps every column at full width. */
  width?: number
}

/** A terminal's width, when it says; else the width tables are fitted to. */
export const DEFAULT_WIDTH = 100

// Boxed: a border before, between and after the columns, and a space either side of each cell.
const boxedOverhead = (columns: number) => columns + 1 + 2 * columns

export function renderTable(head: readonly Column[], rows: readonly (readonly Cell[])[], { tty, color, width }: TableStyle): string {
  const titles = head.map((c) => (typeof c === 'string' ? c : c.title))
  const text = rows.map((row) => titles.map((_, i) => cellText(row[i])))
  if (!tty) return plain(titles, text)

  let shownTitles = titles
  let shownRows = text
  let note = ''
  const options: ConstructorParameters<typeof Table>[0] = { style: { head: [], border: [] } }
  if (width !== undefined) {
    const fits = head.map((c) => (typeof c === 'string' ? 'wrap' : c.fit))
    const columns = titles.map((t, i) => ({
      natural: Math.max(length(t), ...text.map((r) => widest(r[i]!))),
      title: length(t),
      word: Math.max(0, ...text.map((r) => longestWord(r[i]!))),
      fit: fits[i]!,
    }))
    const layout = fitColumns(columns, width, boxedOverhead)
    const cut = (cell: string, i: number, fit: Fit) => fitCell(cell, layout.widths[i]!, fit).join('\n')
    shownTitles = titles.slice(0, layout.kept).map((t, i) => cut(t, i, 'wrap'))
    shownRows = text.map((r) => r.slice(0, layout.kept).map((cell, i) => cut(cell, i, fits[i]!)))
    options.colWidths = layout.widths.map((w) => w + 2)
    if (layout.kept < titles.length) {
      const left = `(${titles.slice(layout.kept).join(', ')} left out to fit ${width} columns: --wide or --json shows ${titles.length - layout.kept === 1 ? 'it' : 'them'})`
      note = `\n${fitCell(left, width, 'wrap').join('\n')}`
    }
  }
  // Bold by hand: cli-table3's colour library switches itself off by environment (e.g. CI=true), our caller already decided.
  options.head = shownTitles.map((h) => (color ? h.split('\n').map((l) => `\x1b[1m${l}\x1b[22m`).join('\n') : h))
  const table = new Table(options)
  for (const row of shownRows) table.push(row)
  return `${table.toString()}${note}`
}

function plain(titles: string[], rows: string[][]): string {
  const table = new Table({
    head: titles,
    chars: PLAIN_CHARS,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
  })
  for (const row of rows) table.push(row)
  return table.toString().split('\n').map((line) => line.trimEnd()).join('\n')
}

function widest(text: string): number {
  return Math.max(0, ...text.split('\n').map(length))
}

function longestWord(text: string): number {
  return Math.max(0, ...text.split(/[\s]+/).map(length))
}

function cellText(cell: Cell): string {
  return cell === null || cell === undefined ? '' : String(cell)
}
