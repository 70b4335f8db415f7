/**
 * The in-process crash model of the randomized schedules.
 *
 * A "process" is a Gate with its store handle and targets wrapped in a Life.
 * The crash is armed at the k-th durable boundary the process passes (every
 * commit of an effect's records, its last record naming it, and every apply()
 * that returned): right after that
 * boundary the Life dies. From then on every call the dead process makes to
 * its store or its targets throws CrashSignal before doing anything, and every
 * answer still on its way to it (an append or an apply already under way) is
 * thrown away; so it can write nothing more, send nothing more, and learn
 * nothing more. A fresh Gate on a fresh wrapper then recovers, as a restarted
 * process would.
 *
 * What this models: a process stopping at an exact durable boundary with all
 * its memory lost (the gate's in-flight map, retry loops, pending promises),
 * while what it had already made durable stays, and requests it had already
 * put on the wire still reach the service (the service acts on them, the
 * process never hears back).
 *
 * What it does not model, and what covers it instead:
 * - the kill landing inside a store transaction or an fsync, and the OS
 *   dropping unflushed pages: test/crash/crash-points.test.ts SIGKILLs real
 *   child processes at every named point, and store-faults.test.ts stops
 *   PostgreSQL immediately and fills the SQLite disk;
 * - a write issued before the crash landing after it: an append under way
 *   when the process dies is let finish (the equivalent of the crash coming a
 *   moment later), and the next process starts only once it has.
 */
import type { Effect, Receipt } from '../../src/core/effect.js'
import { DispatchFault } from '../../src/core/errors.js'
import type { Store } from '../../src/core/stores/store.js'
import type { ApplyContext, EffectTarget } from '../../src/core/targets/target.js'

export class CrashSignal extends Error {
  constructor(readonly point: string) {
    super(`crashed ${point}`)
    this.name = 'CrashSignal'
  }
}

export interface CrashEvent {
  /** 'after-<state>' for a record written, 'after-apply' for an apply that returned. */
  point: string
  effectId: string
  /** Which boundary, counting from 1 across the whole process. */
  boundary: number
}

export class Life {
  dead = false
  boundaries = 0
  crash?: CrashEvent
  /** Resolves when the process dies (never, if it lives). */
  readonly died: Promise<void>
  private die!: () => void

  /** @param crashAt the boundary to die after; undefined: never */
  constructor(
    private readonly crashAt: number | undefined,
    private readonly onCrash: (e: CrashEvent) => void = () => {},
  ) {
    this.died = new Promise((resolve) => (this.die = resolve))
  }

  check(point: string): void {
    if (this.dead) throw new CrashSignal(`(already dead) ${point}`)
  }

  /** A durable boundary was passed; dies here when armed for it. */
  pass(point: string, effectId: string): void {
    this.boundaries++
    if (this.dead || this.boundaries !== this.crashAt) return
    this.dead = true
    this.crash = { point, effectId, boundary: this.boundaries }
    this.onCrash(this.crash)
    this.die()
  }
}

export function crashableStore(inner: Store, life: Life): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown
      if (typeof value !== 'function') return value
      if (prop === 'append') {
        return async (requests: Parameters<Store['append']>[0]) => {
          life.check('append')
          const results = await inner.append(requests)
          if (life.dead) throw new CrashSignal('answer lost')
          // One boundary per commit of an effect: the records of a chain (Store.append) have none between them.
          results.forEach((r, i) => {
            if (r.ok && !requests[i + 1]?.chained) life.pass(`after-${r.record.state.toLowerCase()}`, requests[i]!.effectId)
          })
          if (life.dead) throw new CrashSignal(life.crash!.point)
          return results
        }
      }
      if (prop === 'close') return () => inner.close()
      return (...args: unknown[]) => {
        life.check(String(prop))
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
}

export interface SendWatch {
  /** Called before a request leaves (to check the journal has it DISPATCHED). */
  beforeSend(effect: Effect): Promise<void>
  /** apply() failed in a way that leaves the sender unsure whether it landed (a timeout, a reset, a 5xx). */
  unsure(effect: Effect): void
}

/** The target of a process: dead processes send nothing and hear nothing. */
export function crashableTarget(inner: EffectTarget, life: Life, watch?: SendWatch): EffectTarget {
  const t: EffectTarget = {
    name: inner.name,
    tier: inner.tier,
    validatePremises: async (effect) => {
      life.check('validatePremises')
      const v = await inner.validatePremises(effect)
      life.check('validatePremises answer')
      return v
    },
    apply: async (effect: Effect, ctx: ApplyContext): Promise<Receipt> => {
      life.check('apply')
      await watch?.beforeSend(effect)
      life.check('apply')
      let receipt: Receipt
      try {
        receipt = await inner.apply(effect, ctx)
      } catch (err) {
        if (!(err instanceof DispatchFault) || err.kind === 'unknown') watch?.unsure(effect)
        throw err
      }
      life.check('apply answer')
      life.pass('after-apply', effect.id)
      if (life.dead) throw new CrashSignal('after-apply')
      return receipt
    },
  }
  if (inner.query) {
    const query = inner.query.bind(inner)
    t.query = async (effect) => {
      life.check('query')
      const r = await query(effect)
      life.check('query answer')
      return r
    }
  }
  if (inner.capture) t.capture = inner.capture.bind(inner)
  return t
}
