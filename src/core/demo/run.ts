/**
 * `interlock demo`: the whole promise, end to end, on the embedded default.
 * Each scenario runs a scripted agent in a worker process, kills it with
 * SIGKILL while its effects are in flight, recovers, and sets the journal
 * beside the targets' own records (see scenario.ts).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { localScenario } from './local-scenario.js'
import { notaryScenario } from './notary-scenario.js'
import { refundsScenario } from './refunds-scenario.js'
import type { ScenarioReport } from './scenario.js'

export const SCENARIOS = {
  local: localScenario,
  refunds: refundsScenario,
  notary: notaryScenario,
} as const
export type ScenarioName = keyof typeof SCENARIOS

export interface DemoReport {
  dir: string
  kept: boolean
  scenarios: ScenarioReport[]
  ok: boolean
}

export interface DemoOptions {
  /** Which scenarios, in order (default: all). */
  scenarios?: ScenarioName[]
  keep?: boolean
  /** Progress lines for people. */
  log?: (line: string) => void
  timeoutMs?: number
}

export async function runDemo(opts: DemoOptions = {}): Promise<DemoReport> {
  const log = opts.log ?? (() => {})
  const dir = mkdtempSync(join(tmpdir(), 'interlock-demo-'))
  const scenarios: ScenarioReport[] = []
  try {
    for (const name of opts.scenarios ?? (Object.keys(SCENARIOS) as ScenarioName[])) {
      const sub = join(dir, name)
      mkdirSync(sub)
      log(`── ${name}: journal ${join(sub, 'journal.db')}`)
      scenarios.push(await SCENARIOS[name](sub, log, opts.timeoutMs ?? 60_000))
    }
    return { dir, kept: Boolean(opts.keep), scenarios, ok: scenarios.every((s) => s.ok) }
  } finally {
    if (!opts.keep) rmSync(dir, { recursive: true, force: true })
  }
}
