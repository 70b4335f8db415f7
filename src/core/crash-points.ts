/**
 * Named crash points on every durable boundary of the lifecycle.
 *
 * They are no-ops unless a test (or the demo) arms one through the environment:
 *   INTERLOCK_CRASH_AT=after-dispatched        die at the first pass
 *   INTERLOCK_CRASH_AT=after-dispatched@3      die at the third pass
 *   INTERLOCK_CRASH_MODE=pause                 instead of dying, stop at every pass
 *                                              and say so on stderr, so another
 *                                              process can SIGKILL or SIGSTOP this
 *                                              one at a moment it chooses (at a
 *                                              synchronous point, crashPointNow, the
 *                                              process SIGSTOPs itself: SIGCONT
 *                                              resumes it where it stood)
 * "Die" is SIGKILL to this very process: no finally blocks, no flush, exactly
 * what a power cut or an OOM kill leaves behind.
 */
export const CRASH_POINTS = [
  /** PROPOSED alone is durable: an effect a rule holds (HELD next), or an outbox agent's proposal. */
  'after-proposed',
  /**
   * Premises checked, the commit that makes the effect DISPATCHED (or
   * REJECTED) not yet made: for a new effect nothing is journaled and nothing
   * sent; the same submit later names the same effect.
   */
  'after-premises',
  'after-held',
  /** An operator's release is durable (HELD → HELD), the AUTHORIZED it may complete not yet written: recovery finishes it. */
  'after-release',
  /** AUTHORIZED alone is durable: a held effect released, never on the path of one no rule holds (AUTHORIZED and DISPATCHED are one commit). */
  'after-authorized',
  /** DISPATCHED is durable, nothing sent yet; on a new effect's path, PROPOSED and AUTHORIZED became durable in the same commit. */
  'after-dispatched',
  /** A notarized target (notary/notarized.ts) wrote `intend` for the attempt and has sent nothing yet. */
  'after-intend',
  /** apply() returned, COMMITTED not yet written: the window tier 2 queries and tier 3 cannot close. */
  'after-apply',
  /**
   * A relay's lease, asked once more by the HTTP target right before the
   * request is written (targets/http/fence.ts), said yes; nothing is written
   * yet. A relay stopped here and resumed past its lease still writes: the gap
   * docs/operators.md, "Known limitations", names, closed by a service that checks the
   * notary (docs/notary.md, "A late request").
   */
  'before-write',
  'after-committed',
  /** DISPATCHED → AUTHORIZED is durable (the target did not apply it): nothing is sent again before its notBefore, and then only after the premises are checked again. */
  'after-returned',
  'after-rejected',
  'after-failed',
  'after-ambiguous',
] as const
export type CrashPoint = (typeof CRASH_POINTS)[number]

export const CRASH_ENV = 'INTERLOCK_CRASH_AT'
export const CRASH_MODE_ENV = 'INTERLOCK_CRASH_MODE'
/** The line a paused process writes to stderr: `interlock-paused <point> <effect id>`. */
export const PAUSED_PREFIX = 'interlock-paused'

interface Armed {
  point: string
  remaining: number
  pause: boolean
}
let armed: Armed | null | undefined

function arm(): Armed | null {
  const spec = process.env[CRASH_ENV]
  if (!spec) return null
  const [point, nth] = spec.split('@')
  return { point: point!, remaining: nth ? Math.max(1, Number(nth)) : 1, pause: process.env[CRASH_MODE_ENV] === 'pause' }
}

const never = new Promise<void>(() => {})

export function crashPoint(point: CrashPoint, effectId = ''): Promise<void> | void {
  if (armed === undefined) armed = arm()
  if (armed === null || armed.point !== point) return
  if (armed.pause) {
    process.stderr.write(`${PAUSED_PREFIX} ${point} ${effectId}\n`)
    return never
  }
  armed.remaining -= 1
  if (armed.remaining === 0) process.kill(process.pid, 'SIGKILL')
}

/**
 * A crash point inside synchronous code (no promise to wait on): dies as
 * crashPoint does; in pause mode stops this very process (SIGSTOP) after
 * saying so, and goes on from here when it gets SIGCONT.
 */
export function crashPointNow(point: CrashPoint, effectId = ''): void {
  if (armed === undefined) armed = arm()
  if (armed === null || armed.point !== point) return
  if (armed.pause) {
    process.stderr.write(`${PAUSED_PREFIX} ${point} ${effectId}\n`)
    process.kill(process.pid, 'SIGSTOP')
    return
  }
  armed.remaining -= 1
  if (armed.remaining === 0) process.kill(process.pid, 'SIGKILL')
}

/** For tests that change the environment in-process. */
export function resetCrashPoints(): void {
  armed = undefined
}

/**
 * The point passed once a transition is durable: named after the new state,
 * except a return (DISPATCHED → AUTHORIZED). A commit of several records
 * passes only the point of its last.
 */
export function stateCrashPoint(state: string, from?: string | null): CrashPoint {
  if (from === 'DISPATCHED' && state === 'AUTHORIZED') return 'after-returned'
  return `after-${state.toLowerCase()}` as CrashPoint
}
