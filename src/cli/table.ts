/**
 * Tables for people (STYLE habit 8). On a terminal: boxed, bold headings. Off
 * a terminal (pipes, CI logs, files): plain space-aligned columns with no
 * escape codes, so `grep`/`awk` work on the output.
 */
import Table from 'cli-table3'

export type Cell = string | number | boolean | null | undefined

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
}

export function renderTable(head: readonly string[], rows: readonly (readonly Cell[])[], { tty, color }: TableStyle): string {
  const table = tty
    ? // Bold by hand: cli-table3's colour library switches itself off by environment (e.g. CI=true), our caller already decided.
      new Table({ head: head.map((h) => (color ? `\x1b[1m${h}\x1b[22m` : h)), style: { head: [], border: [] } })
    : new Table({
        head: [...head],
        chars: PLAIN_CHARS,
        style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
      })
  for (const row of rows) table.push(row.map(cellText))
  const text = table.toString()
  return tty ? text : text.split('\n').map((line) => line.trimEnd()).join('\n')
}

function cellText(cell: Cell): string {
  return cell === null || cell === undefined ? '' : String(cell)
}
