/**
 * A randomized crash schedule, a pure function of its seed: which effects
 * (tier, stale premise or not, how many duplicate submits and from which
 * process), which faults the service will produce, whether the submits run
 * at once, and after which durable boundary the first process dies.
 */
import type { Tier } from '../../src/core/effect.js'
import type { FaultMode } from '../../src/emulators/emulator.js'
import { Prng } from './prng.js'

export interface EffectPlan {
  n: number
  tier: Tier
  /** The premise changes between capture and submit: the gate must reject it. */
  stale: boolean
  /** Submits of this same effect by the first process (2+: duplicates racing). */
  submits: number
  /** A second, live process submits it too (a duplicate across processes). */
  second: boolean
}

export interface FaultPlan {
  mode: FaultMode
  route: 'POST /idempotent' | 'POST /plain'
  times: number
}

export interface Schedule {
  seed: number
  effects: EffectPlan[]
  faults: FaultPlan[]
  /** All submits at once, or one after another. */
  concurrent: boolean
  /** The first process dies after this durable boundary (undefined: it lives). */
  crashAt?: number
}

const MODES: FaultMode[] = ['apply-then-drop', 'reset-before-apply', 'reset-after-apply', '5xx', 'hang']

export function makeSchedule(seed: number): Schedule {
  const r = new Prng(seed)
  const effects: EffectPlan[] = Array.from({ length: r.int(1, 4) }, (_, n) => ({
    n,
    tier: r.int(1, 3) as Tier,
    stale: r.chance(0.12),
    submits: r.chance(0.25) ? 2 : 1,
    second: r.chance(0.2),
  }))
  const faults: FaultPlan[] = Array.from({ length: r.pick([0, 0, 1, 1, 2]) }, () => ({
    // hang costs a client timeout each time: kept rarer than the others.
    mode: r.chance(0.05) ? 'hang' : r.pick(MODES.slice(0, 4)),
    route: r.pick(['POST /idempotent', 'POST /plain'] as const),
    times: r.int(1, 2),
  }))
  // Each effect passes about three boundaries (its first commit, apply, its outcome; more on retries and
  // duplicates); some schedules die late or never.
  const crashAt = r.chance(0.8) ? r.int(1, effects.length * 3 + 1) : undefined
  return { seed, effects, faults, concurrent: r.chance(0.7), crashAt }
}

export function describeSchedule(s: Schedule): string {
  const e = s.effects.map((p) => `#${p.n} tier ${p.tier}${p.stale ? ' stale' : ''}${p.submits > 1 ? ` ×${p.submits}` : ''}${p.second ? ' +2nd process' : ''}`)
  const f = s.faults.map((x) => `${x.mode} on ${x.route} ×${x.times}`)
  return `seed ${s.seed}: ${e.join(', ')}; faults: ${f.join(', ') || 'none'}; ${s.concurrent ? 'concurrent' : 'sequential'}; crash ${s.crashAt === undefined ? 'never' : `after boundary ${s.crashAt}`}`
}
