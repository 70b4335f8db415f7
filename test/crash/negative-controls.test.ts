/**
 * Negative controls: with each UNSAFE test switch on (src/core/unsafe.ts) the
 * same randomized harness must report violations, of the invariant that
 * switch breaks. A harness that cannot fail proves nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { UNSAFE_SWITCHES, unsafe, type UnsafeSwitch } from '../../src/core/unsafe.js'
import { runBatch } from './batch.js'
import { sqliteRig, type Rig } from './rig.js'

const SCHEDULES = 150

// Each switch must show in what it breaks; (a) both where it is seen (the journal at send time)
// and in the service's own ledger (a crash between the send and DISPATCHED makes recovery send again).
const CASES: [UnsafeSwitch, string, RegExp[]][] = [
  ['sendBeforeDurable', 'send before DISPATCHED is durable', [/\[6\] sent to the target before DISPATCHED was durable/, /\[1\] applied [2-9] times \(tier [23]/]],
  ['newKeyOnRetry', 'a new idempotency key on retry', [/\[1\] applied [2-9] times \(tier 1/]],
  ['skipPremiseCheck', 'skip the premise re-check', [/\[7\] applied although its premise had changed/]],
  ['resendTier3', 're-send tier 3 on recovery', [/\[1\] applied [2-9] times \(tier 3/]],
]

let rig: Rig
beforeAll(async () => {
  rig = await sqliteRig()
})
afterAll(() => rig?.close())
afterEach(() => {
  for (const name of Object.values(UNSAFE_SWITCHES)) delete process.env[name]
})

describe('negative controls: the harness reports each unsafe switch', () => {
  it('the switches are inert unless set to exactly "1"', () => {
    for (const value of [undefined, '', '0', 'true', 'yes']) {
      for (const [key, name] of Object.entries(UNSAFE_SWITCHES)) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
        expect(unsafe(key as UnsafeSwitch)).toBe(false)
      }
    }
  })

  it.each(CASES)('%s (%s): violations found', async (name, _what, expected) => {
    process.env[UNSAFE_SWITCHES[name]] = '1'
    // Fresh seeds per switch, all from one rig.
    const first = 2_000_000 + CASES.findIndex((c) => c[0] === name) * SCHEDULES
    const r = await runBatch(rig, first, SCHEDULES)
    const all = r.failures.flatMap((f) => f.violations)
    console.log(`${name}: ${r.failures.length}/${SCHEDULES} schedules violated, e.g. ${all[0] ?? '(none)'}`)
    expect(r.failures.length).toBeGreaterThan(0)
    for (const e of expected) expect(all.some((v) => e.test(v)), `${e}\n${all.slice(0, 5).join('\n')}`).toBe(true)
  }, 120_000)
})
