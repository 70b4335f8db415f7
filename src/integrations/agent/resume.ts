/**
 * Before a framework resumes a run from its own persisted state, Interlock
 * finishes what a crash left in flight in that run's thread, by tier: tier 1
 * re-applied with the same key, tier 2 asked, tier 3 AMBIGUOUS. Then the
 * framework re-executes its tool calls, and each finds its effect's outcome
 * in the journal instead of sending it again.
 *
 * In outbox mode the relays do this; there is nothing to run here.
 */
import type { Interlock } from '../../core/interlock.js'
import type { RecoveryReport } from '../../core/recovery.js'
import type { RunMode } from './carry.js'

export async function recoverThread(interlock: Interlock, thread: string, mode: RunMode = 'inline'): Promise<RecoveryReport | undefined> {
  if (mode === 'outbox') return undefined
  return interlock.gate.recover({ filter: (s) => s.effect.thread === thread })
}
