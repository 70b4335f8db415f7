/**
 * Submitting a tool call's effect and carrying it as far as it goes, in the
 * two ways an agent runs (docs/design.md, "Two ways to run"):
 * - inline: this process journals and sends. A call whose effect was already
 *   journaled and is found in flight with nobody here working on it (a crash
 *   earlier, or a held call operators have since released) is carried on
 *   here by its tier, as recovery would;
 * - outbox: this process only proposes; relays decide and send; the answer is
 *   what the effect has come to within `waitMs`.
 */
import type { EffectInput } from '../../core/effect.js'
import type { Interlock } from '../../core/interlock.js'
import type { SubmitOutcome } from '../../core/outcome.js'

export type RunMode = 'inline' | 'outbox'

export interface CarryOptions {
  mode: RunMode
  /** Outbox mode: the longest wait for a relay's outcome before answering "in flight". */
  waitMs: number
  /** Whether the effect was not journaled before this call. */
  isNew: boolean
  log?: (line: string) => void
}

export async function submitAndCarry(interlock: Interlock, input: EffectInput, o: CarryOptions): Promise<SubmitOutcome> {
  return o.mode === 'inline' ? inline(interlock, input, o) : outbox(interlock, input, o.waitMs)
}

async function inline(interlock: Interlock, input: EffectInput, o: CarryOptions): Promise<SubmitOutcome> {
  const gate = interlock.gate
  const outcome = await gate.submit(input)
  // A new call that ends in flight has spent its tries; recovery (the next start, or the next identical call) finishes it.
  if (o.isNew || outcome.status !== 'in_flight' || outcome.notBefore) return outcome
  const id = outcome.effectId
  const report = await gate.recover({ filter: (s) => s.effect.id === id })
  const mine = report.effects.find((e) => e.effectId === id)
  if (mine?.error) o.log?.(`effect ${id.slice(0, 12)}: could not be carried on: ${mine.error}`)
  return mine?.outcome ?? outcome
}

async function outbox(interlock: Interlock, input: EffectInput, waitMs: number): Promise<SubmitOutcome> {
  const handle = await interlock.outbox.submit(input)
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<SubmitOutcome>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'in_flight', effectId: handle.effectId, state: handle.state, reason: `proposed; no relay had finished it within ${waitMs} ms` }), waitMs)
  })
  try {
    return await Promise.race([handle.result(), late])
  } finally {
    clearTimeout(timer)
  }
}
