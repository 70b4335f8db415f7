/**
 * One look at an effect from inside a durable engine's step: submit it, and
 * when it was journaled before (the engine is running the step again after a
 * crash, or after the durable wait for a release) and nobody here carries it
 * on, finish it by its tier as recovery does: tier 1 sent again with the same
 * key, tier 2 asked first, tier 3 AMBIGUOUS (recovery.ts). The same pattern
 * as the MCP proxy's call desk (integrations/mcp/calls.ts).
 *
 * An effect submitted for the first time is not recovered at once when its
 * tries ran out: the engine's next look (a durable wait, a retry) does that.
 *
 * In outbox mode the step only proposes; relays send. A look waits at most
 * `waitMs` for a relay's outcome, then reports the effect in flight.
 */
import { toEffect, type EffectInput } from '../../core/effect.js'
import type { Gate } from '../../core/gate.js'
import type { SubmitOutcome } from '../../core/outcome.js'
import type { Outbox } from '../../core/outbox/outbox.js'

/** Where a step's effects go: an inline gate, or an outbox drained by `interlock relay`. */
export type Submitter = Gate | Outbox

export interface LookOptions {
  /** Outbox mode: the longest a look waits for a relay's outcome (default 10 s). */
  waitMs?: number
}

export const DEFAULT_WAIT_MS = 10_000

export async function look(via: Submitter, input: EffectInput, options: LookOptions = {}): Promise<SubmitOutcome> {
  return isGate(via) ? lookInline(via, input) : lookOutbox(via, input, options.waitMs ?? DEFAULT_WAIT_MS)
}

async function lookInline(gate: Gate, input: EffectInput): Promise<SubmitOutcome> {
  // Validates the input as submit does: a bad effect is refused here, before anything is read.
  const id = toEffect(input).id
  const before = await gate.store.get(id)
  const outcome = await gate.submit(input)
  if (!before || outcome.status !== 'in_flight' || outcome.notBefore) return outcome
  const report = await gate.recover({ filter: (s) => s.effect.id === id })
  return report.effects.find((e) => e.effectId === id)?.outcome ?? outcome
}

async function lookOutbox(outbox: Outbox, input: EffectInput, waitMs: number): Promise<SubmitOutcome> {
  const handle = await outbox.submit(input)
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<SubmitOutcome>((resolve) => {
    timer = setTimeout(
      () => resolve({ status: 'in_flight', effectId: handle.effectId, state: handle.state, reason: `proposed; no relay had finished it within ${waitMs} ms` }),
      waitMs,
    )
  })
  try {
    return await Promise.race([handle.result(), late])
  } finally {
    clearTimeout(timer)
  }
}

function isGate(via: Submitter): via is Gate {
  return typeof (via as Gate).recover === 'function'
}
