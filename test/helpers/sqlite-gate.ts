/**
 * A real Gate on a real SQLite journal, for target tests, and the two ways
 * they leave an effect in flight as a crash would:
 * - a gate with `maxAttempts: 1` whose only try ends in an unknown outcome
 *   returns `in_flight` with the effect DISPATCHED (tiers 1 and 2);
 * - `journalDispatched` writes PROPOSED → AUTHORIZED → DISPATCHED directly, as a
 *   process does right before it sends (any tier; then the test sends).
 * `restart()` is the next process: the old gate is abandoned without closing
 * (a crash closes nothing), a new store handle and new targets are opened on
 * the same file, and the new gate is what recovers.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Effect, Tier } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { proposal, type RetryOptions } from '../../src/core/gate-context.js'
import { openStore } from '../../src/core/stores/open.js'
import type { Store } from '../../src/core/stores/store.js'
import type { EffectTarget } from '../../src/core/targets/target.js'

export interface SqliteGate {
  gate: Gate
  store: Store
  /** Every delay the gate asked to sleep, in order (Retry-After shows here). */
  slept: number[]
  /** The next process on the same journal file. */
  restart(): Promise<SqliteGate>
  /** Closes every store handle and target opened, and removes the journal. */
  cleanup(): Promise<void>
}

export interface SqliteGateOptions {
  retry?: Partial<RetryOptions>
  /** Really sleep (for tests that need time to pass between tries); default: record and return at once. */
  realSleep?: boolean
  /** The gate's wall clock (default Date.now), e.g. one a test moves on as the gate sleeps. */
  now?: () => number
  /** Told of every sleep the gate asks for, e.g. to move that clock on. */
  onSleep?: (ms: number) => void
}

export async function sqliteGate(makeTargets: () => EffectTarget[], opts: SqliteGateOptions = {}): Promise<SqliteGate> {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-target-'))
  const path = join(dir, 'journal.db')
  const opened: { store: Store; targets: EffectTarget[] }[] = []

  const start = async (): Promise<SqliteGate> => {
    const store = await openStore({ kind: 'sqlite', path })
    const targets = makeTargets()
    opened.push({ store, targets })
    const slept: number[] = []
    const sleep = async (ms: number) => {
      slept.push(ms)
      opts.onSleep?.(ms)
      if (opts.realSleep) await new Promise((r) => setTimeout(r, ms))
    }
    const gate = new Gate({ store, targets, sleep, now: opts.now, retry: { maxAttempts: 3, backoffMs: 1, ...opts.retry } })
    return { gate, store, slept, restart: start, cleanup }
  }
  const cleanup = async () => {
    for (const { store, targets } of opened.splice(0)) {
      for (const t of targets) await t.close?.()
      await store.close()
    }
    rmSync(dir, { recursive: true, force: true })
  }
  return start()
}

/** Journals an effect up to DISPATCHED, as the gate does right before it sends. */
export async function journalDispatched(store: Store, effect: Effect, tier: Tier): Promise<void> {
  const steps = [
    { effectId: effect.id, from: null, to: 'PROPOSED' as const, data: proposal(effect, tier), effect, tier },
    { effectId: effect.id, from: 'PROPOSED' as const, to: 'AUTHORIZED' as const, data: {} },
    { effectId: effect.id, from: 'AUTHORIZED' as const, to: 'DISPATCHED' as const, data: {} },
  ]
  for (const step of steps) {
    const [r] = await store.append([step])
    if (!r!.ok) throw new Error(`could not journal ${effect.id} to ${step.to}`)
  }
}

/** Every journal record, as text: for "no secret anywhere in the journal" checks. */
export async function journalText(store: Store): Promise<string> {
  const out: string[] = []
  for await (const r of store.records()) out.push(JSON.stringify(r))
  return out.join('\n')
}
