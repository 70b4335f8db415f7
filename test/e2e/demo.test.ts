/**
 * `interlock demo`, the README's first command, as a user runs it: it must
 * exit 0 and its table must rest on the targets' own counts.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DEMO_WIDTH, demoLines } from '../../src/cli/demo-view.js'
import type { DemoReport } from '../../src/core/demo/run.js'
import { interlock } from '../helpers/cli.js'

/** Terminal columns a line takes (every character the demo prints is one column wide). */
function columns(line: string): number {
  return [...line].length
}

describe('interlock demo', () => {
  it('kills the worker in flight, recovers, and shows every effect applied at most once', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-demo-e2e-'))
    const run = await interlock(['demo', '--json'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    const report = JSON.parse(run.stdout) as {
      ok: boolean
      scenarios: {
        name: string
        ok: boolean
        workerKilledWith: string
        rows: { label: string; target: string; tier: number; notary?: boolean; final: string; recovery: string; applied: number; requests?: number }[]
      }[]
    }
    expect(report.ok).toBe(true)
    expect(report.scenarios.map((s) => s.name)).toEqual(['local', 'refunds', 'notary'])
    for (const s of report.scenarios) expect(s.workerKilledWith).toBe('SIGKILL')
    const byLabel = Object.fromEntries(report.scenarios[0]!.rows.map((r) => [r.label, r]))
    expect(byLabel.refund).toMatchObject({ tier: 1, final: 'COMMITTED', recovery: 're-applied', applied: 1, requests: 2 })
    expect(byLabel['record refund']).toMatchObject({ tier: 2, final: 'COMMITTED', recovery: 'found-by-query', applied: 1 })
    expect(byLabel['notify customer']).toMatchObject({ tier: 3, final: 'AMBIGUOUS', recovery: 'marked-ambiguous', applied: 1 })
    expect(byLabel['stale receipt fix']).toMatchObject({ final: 'REJECTED', applied: 0 })

    // The refund agent: Stripe's own ledger has one refund per committed refund effect, none for the stale one.
    const refunds = report.scenarios[1]!.rows
    const stripe = refunds.filter((r) => r.target === 'stripe')
    expect(stripe.map((r) => [r.final, r.applied])).toEqual([
      ['COMMITTED', 1],
      ['COMMITTED', 1],
      ['REJECTED', 0],
    ])
    // Stripe dropped its answer to whichever refund reached it first, after applying it:
    // that refund was sent twice with the same key, and still refunded once.
    expect(stripe.slice(0, 2).map((r) => r.requests).sort()).toEqual([1, 2])
    expect(refunds.find((r) => r.target === 'github')).toMatchObject({ final: 'COMMITTED', recovery: 'found-by-query', applied: 1 })
    expect(refunds.find((r) => r.target === 'slack')).toMatchObject({ final: 'AMBIGUOUS', applied: 1 })

    // One tier-3 service, the same crash: reached directly it is AMBIGUOUS; behind the notary, recovery
    // finds the service's signed performed there and the effect is COMMITTED, applied once.
    const notary = report.scenarios[2]!.rows
    expect(notary.find((r) => r.target === 'direct')).toMatchObject({ tier: 3, final: 'AMBIGUOUS', recovery: 'marked-ambiguous', applied: 1, requests: 1 })
    expect(notary.find((r) => r.target === 'notarized')).toMatchObject({ tier: 3, notary: true, final: 'COMMITTED', recovery: 'found-by-query', applied: 1, requests: 1 })

    // On a terminal the same report is drawn boxed: it fits a 100-column terminal too.
    for (const s of report.scenarios) expect((s as unknown as { verdict: string }).verdict).toMatch(/^Verdict: the promise holds: /)
    const boxed = demoLines(report as unknown as DemoReport, { tty: true, color: false }).join('\n').split('\n')
    expect(boxed.some((l) => l.startsWith('┌'))).toBe(true)
    expect(boxed.filter((l) => columns(l) > DEMO_WIDTH)).toEqual([])
  })

  it('prints the journal as a table for people', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'interlock-demo-e2e-'))
    const run = await interlock(['demo'], { cwd })
    expect(run.code, run.stderr).toBe(0)
    for (const text of ['re-applied', 'found-by-query', 'AMBIGUOUS', 'REJECTED', 'SIGKILL', 'no refund was paid twice', 'notarized (3+N)', 'PERFORMED (signed by billing)']) {
      expect(run.stdout).toContain(text)
    }
    expect(run.stdout).not.toContain('WRONG')

    // Fits a 100-column terminal; every column is named; each scenario ends with a one-line verdict.
    expect(run.stdout.split('\n').filter((l) => columns(l) > DEMO_WIDTH)).toEqual([])
    const tables = run.stdout.split('\n\n').filter((block) => block.includes('\neffect '))
    expect(tables).toHaveLength(3)
    for (const block of tables) {
      const lines = block.trim().split('\n')
      const head = lines[1]!.trim().split(/ {2,}/)
      expect(head).toEqual(['effect', 'target (tier)', 'journal', 'recovery', 'applied (sent)', 'holds'])
      // As many labels as columns: the widest row has no unnamed column.
      for (const row of lines.slice(2).filter((l) => /^\S.* (ok|WRONG)$/.test(l))) expect(row.trim().split(/ {2,}/).length).toBeLessThanOrEqual(head.length)
      expect(lines.at(-1)).toMatch(/^Verdict: the promise holds: no effect applied twice; (\d+ [A-Z]+(, |\.$))+/)
    }
  })
})
