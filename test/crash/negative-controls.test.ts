/**
 * Negative controls: under each control of controls.ts (test-only decorators
 * of the Store and EffectTarget ports) the harness must report violations,
 * of the invariant that control breaks. A harness that cannot fail proves
 * nothing.
 *
 * 1. The randomized schedules (in-process crash model), every process under
 *    the control.
 * 2. Real child processes (submit-child.ts, relay-child.ts) SIGKILLed at a
 *    crash point, the child that breaks the promise under the control; the
 *    same run without the control leaves every invariant whole.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HttpTargetConfig } from '../../src/core/config/types.js'
import { CRASH_ENV, type CrashPoint } from '../../src/core/crash-points.js'
import { toEffect, type EffectInput, type Tier } from '../../src/core/effect.js'
import { Gate } from '../../src/core/gate.js'
import { openStore } from '../../src/core/stores/open.js'
import { HttpTarget } from '../../src/core/targets/http/http-target.js'
import { createTargets } from '../../src/core/targets/registry.js'
import { runTsChild } from '../helpers/child.js'
import { runBatch } from './batch.js'
import { negativeControl, type ControlName } from './controls.js'
import { checkInvariants } from './invariants.js'
import { LedgerService } from './ledger-service.js'
import { sqliteRig, type Rig } from './rig.js'
import type { ChildPlan } from './submit-child.js'

const SCHEDULES = 150

// Each control must show in what it breaks; sendBeforeDurable both where it is seen (the journal at send time)
// and in the service's own ledger (a crash between the send and DISPATCHED makes recovery send again).
const CASES: [ControlName, string, RegExp[]][] = [
  ['sendBeforeDurable', 'send before DISPATCHED is durable', [/\[6\] sent to the target before DISPATCHED was durable/, /\[1\] applied [2-9] times \(tier [23]/]],
  ['newKeyOnRetry', 'a new idempotency key on retry', [/\[1\] applied [2-9] times \(tier 1/]],
  ['skipPremiseCheck', 'skip the premise re-check', [/\[7\] applied although its premise had changed/]],
  ['resendTier3', 're-send tier 3 on recovery', [/\[1\] applied [2-9] times \(tier 3/]],
]

describe('negative controls: the randomized harness reports each control', () => {
  let rig: Rig
  beforeAll(async () => {
    rig = await sqliteRig()
  })
  afterAll(() => rig?.close())

  it.each(CASES)('%s (%s): violations found', async (name, _what, expected) => {
    // Fresh seeds per control, all from one rig.
    const first = 2_000_000 + CASES.findIndex((c) => c[0] === name) * SCHEDULES
    const r = await runBatch(rig, first, SCHEDULES, { control: negativeControl(name) })
    const all = r.failures.flatMap((f) => f.violations)
    console.log(`${name}: ${r.failures.length}/${SCHEDULES} schedules violated, e.g. ${all[0] ?? '(none)'}`)
    expect(r.failures.length).toBeGreaterThan(0)
    for (const e of expected) expect(all.some((v) => e.test(v)), `${e}\n${all.slice(0, 5).join('\n')}`).toBe(true)
  }, 120_000)
})

/**
 * One run of real processes: `first` is killed at `point`, then `then` (if
 * any) restarts and recovers, then this process recovers with a plain gate.
 */
interface ChildCase {
  control: ControlName
  tier: Tier
  /** The child (or relay child) that is killed, and where. */
  first: { worker: 'submit' | 'relay'; point?: CrashPoint; control: boolean }
  /** A restarted process that recovers, under the control when `control`. */
  then?: { worker: 'submit' | 'relay'; control: boolean }
  /** The effect's premise changes after it is captured. */
  stale?: boolean
  expected: RegExp
}

const CHILD_CASES: ChildCase[] = [
  // The send lands, the child dies before its first commit (PROPOSED … DISPATCHED) is written: nothing is
  // journaled, and the agent, restarted, submits the same effect again, which is sent again.
  { control: 'sendBeforeDurable', tier: 3, first: { worker: 'submit', point: 'after-apply', control: true }, then: { worker: 'submit', control: false }, expected: /\[1\] applied 2 times \(tier 3/ },
  // The same, where nothing submits again: the effect was applied but never journaled.
  { control: 'sendBeforeDurable', tier: 1, first: { worker: 'submit', point: 'after-apply', control: true }, expected: /\[2\] \(never journaled\) but applied 1 times/ },
  { control: 'newKeyOnRetry', tier: 1, first: { worker: 'submit', point: 'after-apply', control: false }, then: { worker: 'submit', control: true }, expected: /\[1\] applied 2 times \(tier 1/ },
  { control: 'skipPremiseCheck', tier: 2, stale: true, first: { worker: 'submit', control: true }, expected: /\[7\] applied although its premise had changed/ },
  { control: 'resendTier3', tier: 3, first: { worker: 'submit', point: 'after-apply', control: false }, then: { worker: 'submit', control: true }, expected: /\[1\] applied 2 times \(tier 3/ },
  { control: 'resendTier3', tier: 3, first: { worker: 'relay', point: 'after-apply', control: false }, then: { worker: 'relay', control: true }, expected: /\[1\] applied 2 times \(tier 3/ },
]

describe('negative controls: SIGKILLed child processes under each control', () => {
  let dir = ''
  let service: LedgerService
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-controls-'))
    service = await new LedgerService().start()
  })
  afterAll(async () => {
    await service?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const targetFor = (tier: Tier): HttpTargetConfig => {
    const base = { type: 'http' as const, method: 'POST' as const, headers: {}, timeoutMs: 5000, connectTimeoutMs: 2000, premiseUrl: `${service.url}/resources/{args.doc}` }
    if (tier === 1) return { ...base, tier, url: `${service.url}/idempotent` }
    if (tier === 2) return { ...base, tier, url: `${service.url}/plain`, queryUrl: `${service.url}/applied/{effect_id}` }
    return { ...base, tier, url: `${service.url}/plain` }
  }

  /** Runs the case, with its control where it says or with none at all; returns the invariants' violations. */
  async function run(c: ChildCase, withControl: boolean, n: number): Promise<string[]> {
    const label = `${c.control}-${c.first.worker}-${withControl ? 'on' : 'off'}-${n}`
    const store = { kind: 'sqlite' as const, path: join(dir, `${label}.db`) }
    const targets = { svc: targetFor(c.tier) }
    const doc = `doc-${label}`
    service.setResource(doc, { version: 1 })
    const capturing = new HttpTarget('svc', targets.svc)
    const input: EffectInput = { thread: label, target: 'svc', action: 'apply', args: { doc }, premises: await capturing.capture('apply', { doc }) }
    await capturing.close()
    if (c.stale) service.setResource(doc, { version: 2 })
    const id = toEffect(input).id

    const spawn = async (step: { worker: 'submit' | 'relay'; control: boolean }, extra: Partial<ChildPlan>, env: Record<string, string>) => {
      const plan: ChildPlan = { store, targets, effects: [input], ...extra, ...(withControl && step.control ? { control: c.control } : {}) }
      const file = join(dir, `${label}-${step.worker}-${extra.recover ? 'recover' : 'first'}.json`)
      writeFileSync(file, JSON.stringify(plan))
      return runTsChild(`test/crash/${step.worker}-child.ts`, [file], env)
    }
    const first = await spawn(c.first, {}, c.first.point ? { [CRASH_ENV]: c.first.point } : {})
    if (c.first.point) expect(first.signal, first.stderr).toBe('SIGKILL')
    else expect(first.code, first.stderr).toBe(0)
    if (c.then) {
      const then = await spawn(c.then, { recover: true }, {})
      expect(then.code, then.stderr).toBe(0)
    }

    const s = await openStore(store)
    const gate = new Gate({ store: s, targets: createTargets(targets).values(), retry: { maxAttempts: 3, backoffMs: 10 } })
    try {
      await gate.recover()
      return await checkInvariants(s, {
        effects: [{ effectId: id, tier: c.tier, stale: c.stale ?? false }],
        applications: (e) => service.count(e),
        crashedInWindow: new Set(c.first.point ? [id] : []),
        unsure: new Set(),
        sentEarly: new Set(),
      })
    } finally {
      await gate.close()
      await s.close()
    }
  }

  it.each(CHILD_CASES.map((c, n) => [c.control, c.first.worker, c, n] as const))('%s (%s child): violations with it, none without', async (_name, _worker, c, n) => {
    const without = await run(c, false, n)
    expect(without).toEqual([])
    const violations = await run(c, true, n)
    expect(violations.some((v) => c.expected.test(v)), violations.join('\n') || '(no violations)').toBe(true)
  }, 60_000)
})
