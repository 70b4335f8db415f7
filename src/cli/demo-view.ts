/**
 * `interlock demo` for people: per scenario, a table that fits a 100-column
 * terminal (boxed on a terminal, plain columns off one), every column named,
 * then what the targets' own ledgers say and a one-line verdict. The journal
 * column spells the final state and abbreviates the three records every
 * effect passes through before it (a legend says so); --json keeps them all.
 */
import type { DemoReport } from '../core/demo/run.js'
import type { DemoRow } from '../core/demo/scenario.js'
import { renderTable, type TableStyle } from './table.js'

/** The widest line the demo may print, for an 100-column terminal. */
export const DEMO_WIDTH = 100

const HEAD = ['effect', 'target (tier)', 'journal', 'recovery', 'applied (sent)', 'holds']

const ABBREVIATED: Record<string, string> = { PROPOSED: 'P', AUTHORIZED: 'A', DISPATCHED: 'D' }

export const LEGEND = [
  'journal         its records: P PROPOSED, A AUTHORIZED, D DISPATCHED, then the state it ended in',
  'recovery        what recover() did after the SIGKILL',
  'applied (sent)  what the target itself recorded: times applied (requests it received)',
  'holds           ok: applied once (tier 1 re-sent with its key, tier 2 found by query), at most once',
  '                (tier 3, AMBIGUOUS for an operator), or never (a stale decision, REJECTED);',
  '                3+N: a tier-3 service behind the notary (N), recovered by asking the notary',
]

export function demoLines(report: DemoReport, style: TableStyle): string[] {
  const lines: string[] = ['', ...LEGEND]
  for (const s of report.scenarios) {
    lines.push('', s.title, renderTable(HEAD, s.rows.map(row), style))
    for (const r of s.rows) if (!r.ok) lines.push(`WRONG: ${r.label} should be ${r.expected}.`)
    lines.push(...s.summary, s.verdict)
  }
  if (report.kept) lines.push('', `Kept ${report.dir}`)
  return lines
}

function row(r: DemoRow): string[] {
  return [
    r.label,
    `${r.target} (${r.tier}${r.notary ? '+N' : ''})`,
    r.journal.map((state, i) => (i < r.journal.length - 1 ? (ABBREVIATED[state] ?? state) : state)).join('→'),
    r.recovery,
    r.requests === undefined ? String(r.applied) : `${r.applied} (${r.requests} sent)`,
    r.ok ? 'ok' : 'WRONG',
  ]
}
