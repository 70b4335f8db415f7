/**
 * A randomized schedule against a notarized tier-3 target (docs/notary.md), a
 * pure function of its seed: which effects (stale premise or not, duplicate
 * submits), whether the service dies in its handler after its claim (before
 * or after its change), after which durable boundary the agent dies
 * (crash-model.ts; writing `intend` and `abort` at the notary are boundaries
 * too), whether the notary goes down after its k-th write and when it comes
 * back (mid-run, before recovery, or only after recovery), which forged or
 * replayed records an adversary sends it, and whether the recovering agent
 * is handed a tampered answer.
 */
import { Prng } from './prng.js'

export type ServiceDeath = 'none' | 'before-change' | 'after-change'
export type NotaryRestart = 'mid-run' | 'before-recovery' | 'after-recovery'
export type Adversary = 'forged-performed' | 'forged-abort' | 'untrusted-claim' | 'replay'

export interface NotaryEffectPlan {
  n: number
  stale: boolean
  submits: number
  /** The service dies in its handler for this effect's first request, after claiming it. */
  serviceDies: ServiceDeath
}

export interface NotarySchedule {
  seed: number
  effects: NotaryEffectPlan[]
  concurrent: boolean
  /** The agent dies after this durable boundary (undefined: it lives). */
  crashAt?: number
  /** The notary goes down right after its k-th written record (its answer to that write lost). */
  notaryDown?: { afterWrites: number; restart: NotaryRestart }
  /** Records an adversary sends the notary, before and after recovery: each must be refused. */
  adversary: Adversary[]
  /** The recovering agent reads an answer whose `performed` was altered: it must not believe it. */
  tampered: boolean
}

const ADVERSARIES: Adversary[] = ['forged-performed', 'forged-abort', 'untrusted-claim', 'replay']

export function makeNotarySchedule(seed: number): NotarySchedule {
  const r = new Prng(seed)
  const effects: NotaryEffectPlan[] = Array.from({ length: r.int(1, 3) }, (_, n) => ({
    n,
    stale: r.chance(0.1),
    submits: r.chance(0.2) ? 2 : 1,
    serviceDies: r.chance(0.12) ? r.pick(['before-change', 'after-change'] as const) : 'none',
  }))
  // Per effect: its first commit, intend, apply, its outcome (more on retries and after an abort).
  const crashAt = r.chance(0.8) ? r.int(1, effects.length * 4 + 1) : undefined
  const notaryDown = r.chance(0.25)
    ? { afterWrites: r.int(1, effects.length * 4), restart: r.pick(['mid-run', 'before-recovery', 'after-recovery'] as const) }
    : undefined
  const adversary = r.chance(0.3) ? ADVERSARIES.filter(() => r.chance(0.5)) : []
  return { seed, effects, concurrent: r.chance(0.6), crashAt, notaryDown, adversary, tampered: r.chance(0.05) }
}

export function describeNotarySchedule(s: NotarySchedule): string {
  const e = s.effects.map((p) => `#${p.n}${p.stale ? ' stale' : ''}${p.submits > 1 ? ` ×${p.submits}` : ''}${p.serviceDies !== 'none' ? ` service dies ${p.serviceDies}` : ''}`)
  const down = s.notaryDown ? `notary down after write ${s.notaryDown.afterWrites}, back ${s.notaryDown.restart}` : 'notary up'
  return `seed ${s.seed}: ${e.join(', ')}; ${s.concurrent ? 'concurrent' : 'sequential'}; agent crash ${s.crashAt === undefined ? 'never' : `after boundary ${s.crashAt}`}; ${down}; adversary: ${s.adversary.join(', ') || 'none'}${s.tampered ? '; tampered answer at recovery' : ''}`
}
