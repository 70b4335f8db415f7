/**
 * Fitting a table into a terminal's width: which width each column gets, and
 * each cell's text cut or wrapped to it. Pure, so the layout is tested without
 * a terminal.
 *
 * The widest column gives way first, one character at a time, until the
 * table fits or every column is at its least: a column of text wraps (at
 * spaces when it can), a column of ids is cut to a prefix (an effect id's
 * first characters name it, as `outbox show` takes them). When even that is
 * too wide (a very narrow terminal), columns are left out from the right and
 * said so; `--wide` and `--json` keep everything.
 */

/** How a column gives way: its text wraps, or (ids) it is cut to a prefix. */
export type Fit = 'wrap' | 'cut'

/** Narrowest a column of text is made (unless its widest line is narrower). */
const MIN_WRAP = 10
/** Narrowest an id column is cut to: a prefix that still names one effect among many. */
const MIN_CUT = 12
/** Longest word kept whole when there is room: a name (`targets.payments.credentials`) reads badly broken. */
const WHOLE_WORD = 30

/** What the layout needs to know of a column. */
export interface ColumnFacts {
  /** Its widest line, heading included. */
  natural: number
  /** Its heading's length. */
  title: number
  /** Its longest word (a run without spaces). */
  word: number
  fit: Fit
}

export interface Layout {
  /** Width of each kept column's text (padding and borders not included). */
  widths: number[]
  /** Columns kept, from the left; the rest were left out. */
  kept: number
}

/**
 * Widths for the columns in `width` characters, of which `overhead(n)` go to
 * the borders and padding of n columns. Every column may go down to a few
 * characters; as many as there is room for keep their longest word whole
 * (a time, a name), those that cost least first; only when even the few
 * characters do not fit are columns left out.
 */
export function fitColumns(columns: readonly ColumnFacts[], width: number, overhead: (columns: number) => number): Layout {
  for (let kept = columns.length; kept > 1; kept--) {
    const shown = columns.slice(0, kept)
    const available = width - overhead(kept)
    const lowest = floors(shown, available)
    if (lowest) return { widths: shrink(shown.map((c) => c.natural), lowest, available), kept }
  }
  // One column, whatever it takes: its lines are wrapped or cut to what is left.
  return { widths: [Math.max(1, Math.min(columns[0]?.natural ?? 1, width - overhead(1)))], kept: Math.min(1, columns.length) }
}

/** How narrow each column may become; undefined when even the narrowest do not fit. */
function floors(columns: readonly ColumnFacts[], available: number): number[] | undefined {
  const floor = columns.map((c) => Math.min(c.natural, Math.max(c.title, c.fit === 'cut' ? MIN_CUT : MIN_WRAP)))
  let total = sum(floor)
  if (total > available) return undefined
  const whole = columns.map((c, i) => Math.min(c.natural, Math.max(floor[i]!, Math.min(c.word, WHOLE_WORD))))
  const cheapestFirst = columns.map((_, i) => i).sort((a, b) => whole[a]! - floor[a]! - (whole[b]! - floor[b]!))
  for (const i of cheapestFirst) {
    const extra = whole[i]! - floor[i]!
    if (total + extra > available) continue
    floor[i] = whole[i]!
    total += extra
  }
  return floor
}

/** The widest column that may still give way does, one character at a time, until they fit. */
function shrink(natural: readonly number[], floor: readonly number[], available: number): number[] {
  const widths = [...natural]
  for (let excess = sum(widths) - available; excess > 0; excess--) {
    let widest = -1
    for (let i = 0; i < widths.length; i++) if (widths[i]! > floor[i]! && (widest < 0 || widths[i]! >= widths[widest]!)) widest = i
    if (widest < 0) break
    widths[widest]!--
  }
  return widths
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0)
}

/** A cell's lines, each at most `width` characters: wrapped at spaces where it can, else broken; or cut. */
export function fitCell(text: string, width: number, fit: Fit): string[] {
  const lines = text.split('\n')
  if (fit === 'cut') return lines.map((line) => [...line].slice(0, width).join(''))
  return lines.flatMap((line) => wrapLine(line, width))
}

function wrapLine(line: string, width: number): string[] {
  const out: string[] = []
  let current = ''
  for (const word of line.split(' ')) {
    const candidate = current === '' ? word : `${current} ${word}`
    if (length(candidate) <= width) {
      current = candidate
      continue
    }
    if (current !== '') out.push(current)
    // A word longer than the column (a URL, a JSON blob) is broken where it must be.
    let rest = [...word]
    while (rest.length > width) {
      out.push(rest.slice(0, width).join(''))
      rest = rest.slice(width)
    }
    current = rest.join('')
  }
  out.push(current)
  return out
}

/** Characters as a terminal counts them, for the text tables hold (no wide East Asian glyphs, no escapes). */
export function length(text: string): number {
  return [...text].length
}
