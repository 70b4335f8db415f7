/**
 * Runs `interlock check`: the config step, then the selected families
 * concurrently (each family's probes concurrently too, each with its own
 * timeout). Nothing is changed anywhere; the report is the whole result.
 */
import { checkConfig } from './config-check.js'
import { keysCheck } from './keys-check.js'
import { policyCheck } from './policy-check.js'
import { storeCheck } from './store-check.js'
import { targetsCheck } from './targets-check.js'
import { notifyCheck } from './notify-check.js'
import { CHECK_FAMILIES, type CheckFamily, type CheckModule, type CheckReport, type CheckRow } from './types.js'

/** The registry: one module per family, in report order. */
export const CHECK_MODULES: readonly CheckModule[] = [storeCheck, targetsCheck, keysCheck, policyCheck, notifyCheck]

export const DEFAULT_PROBE_TIMEOUT_MS = 10_000

export interface RunChecksOptions {
  /** Config file (relative to cwd); default $INTERLOCK_CONFIG, else ./interlock.toml. */
  path?: string
  cwd?: string
  env?: Record<string, string | undefined>
  /** Families to run (config always runs); default all. */
  only?: readonly CheckFamily[]
  /** Per probe (default 10 s). */
  timeoutMs?: number
  /** Told the config's resolved `${VAR}` values, so the caller can scrub them from what it prints. */
  onSecrets?: (values: readonly string[]) => void
  /** Replaces the registry (tests). */
  modules?: readonly CheckModule[]
}

export async function runChecks(options: RunChecksOptions = {}): Promise<CheckReport> {
  const only = options.only && options.only.length > 0 ? [...new Set(options.only)] : [...CHECK_FAMILIES]
  const step = checkConfig({ path: options.path, cwd: options.cwd ?? process.cwd(), env: options.env ?? process.env })
  const rows: CheckRow[] = [...step.rows]
  if (step.context) {
    options.onSecrets?.(step.context.config.secrets)
    const ctx = { ...step.context, timeoutMs: options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS }
    const modules = (options.modules ?? CHECK_MODULES).filter((m) => only.includes(m.family))
    const results = await Promise.all(
      modules.map((m) =>
        m.run(ctx).catch((e: unknown): CheckRow[] => [
          // A module that throws is a bug; its family still gets a failing row rather than a crashed run.
          { id: `${m.family}.error`, family: m.family, name: `${m.family} checks ran`, status: 'fail', detail: (e as Error)?.message ?? String(e), fix: 'Report this with the output of INTERLOCK_DEBUG=1 interlock check.' },
        ]),
      ),
    )
    rows.push(...results.flat())
  }
  const summary = { pass: 0, warn: 0, fail: 0 }
  for (const r of rows) summary[r.status]++
  return { ok: summary.fail === 0, config: step.file, families: ['config', ...only], summary, checks: rows }
}
