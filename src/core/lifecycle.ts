/**
 * The states of an effect and the one table of allowed transitions.
 *
 * PROPOSED ──▶ (HELD ──release──▶) AUTHORIZED ──▶ DISPATCHED ──▶ COMMITTED
 *                 ↺ a release below quorum    ▲               │
 *     │              │                 │      └── returned ───┤ (the target did not apply it: start over later)
 *     └─▶ REJECTED ◀─┴── premises ─────┘                      ├─▶ FAILED     (definite refusal)
 *                                                             ├─▶ REJECTED   (a premise pushed down to the service failed)
 *                                                             └─▶ AMBIGUOUS  (tier 3, outcome unknown) ──resolve──▶ COMMITTED | FAILED
 *
 * AUTHORIZED → HELD: held again before it is sent, by a relay whose policy in
 * force holds the effect and finds no valid quorum behind its authorization
 * (a rule added since it was authorized, or an authorization written by
 * someone without the right to): operators release or deny it as any held
 * effect (relay/send-check.ts).
 *
 * Anything else is an IllegalTransitionError naming both states; the stores
 * check the current state inside the same transaction as the write.
 */
import { IllegalTransitionError } from './errors.js'

export const STATES = [
  'PROPOSED',
  'HELD',
  'AUTHORIZED',
  'DISPATCHED',
  'COMMITTED',
  'REJECTED',
  'FAILED',
  'AMBIGUOUS',
] as const
export type State = (typeof STATES)[number]

export const TRANSITIONS: Readonly<Record<State, readonly State[]>> = {
  PROPOSED: ['HELD', 'AUTHORIZED', 'REJECTED'],
  // HELD → HELD journals one operator's release while the quorum is not yet met (outbox/journal-statements.ts).
  HELD: ['HELD', 'AUTHORIZED', 'REJECTED'],
  AUTHORIZED: ['DISPATCHED', 'REJECTED', 'HELD'],
  // DISPATCHED → AUTHORIZED ("returned", data { returned, notBefore? }): the target said it
  // definitely did not apply the effect and asked for a wait longer than the gate's
  // max_wait_ms, or said it must start over ('not-applied'); never after an unknown outcome.
  // The normal path re-checks the premises before DISPATCHED is written again (returned.ts).
  DISPATCHED: ['COMMITTED', 'FAILED', 'REJECTED', 'AMBIGUOUS', 'AUTHORIZED'],
  // An operator's resolution; re-dispatch of an AMBIGUOUS effect is an explicit operator act.
  AMBIGUOUS: ['COMMITTED', 'FAILED', 'DISPATCHED'],
  COMMITTED: [],
  REJECTED: [],
  FAILED: [],
}

/** States with no way out: the effect's outcome is settled. */
export const TERMINAL_STATES: readonly State[] = ['COMMITTED', 'REJECTED', 'FAILED']

/** States in which something may still happen without an operator. */
export const IN_FLIGHT_STATES: readonly State[] = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED']

export function isState(s: string): s is State {
  return (STATES as readonly string[]).includes(s)
}

export function isTerminal(s: State): boolean {
  return TERMINAL_STATES.includes(s)
}

export function canTransition(from: State | null, to: State): boolean {
  if (from === null) return to === 'PROPOSED'
  return TRANSITIONS[from].includes(to)
}

export function assertTransition(from: State | null, to: State, effectId?: string): void {
  if (!canTransition(from, to)) throw new IllegalTransitionError(from, to, effectId)
}
