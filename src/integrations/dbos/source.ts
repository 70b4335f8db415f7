/**
 * Where a step's effect goes: through an inline Gate (this process journals
 * and sends) or into the outbox of an Interlock (this process proposes, a
 * relay sends). Two moves each: submit the effect, and look again at one
 * already submitted, carrying it on where this process is the one to.
 */
import { effectId, type EffectInput } from '../../core/effect.js'
import { InputError } from '../../core/errors.js'
import type { Gate } from '../../core/gate.js'
import type { Interlock } from '../../core/interlock.js'
import { outcomeOf, type SubmitOutcome } from '../../core/outcome.js'
import type { Store } from '../../core/stores/store.js'

/** An inline Gate, or an Interlock (openInterlock()): its gate, or its outbox in mode 'outbox'. */
export type InterlockSource = Gate | Interlock

export type SourceMode = 'inline' | 'outbox'

export interface EffectRoute {
  store: Store
  submit(input: EffectInput): Promise<SubmitOutcome>
  /** Where a submitted effect stands now, carried on first when it waits for nobody but this process. */
  carry(id: string, now: number): Promise<SubmitOutcome>
}

/** Outbox mode: how long a step waits for a relay's outcome before the workflow waits instead. */
const SETTLE_MS = 5_000

export function routeOf(source: InterlockSource, mode: SourceMode = 'inline'): EffectRoute {
  const interlock = isInterlock(source) ? source : undefined
  if (mode === 'outbox') {
    if (!interlock) throw new InputError("mode 'outbox' needs an Interlock, not a bare Gate: the outbox is the Interlock's", { hint: 'Pass the Interlock from openInterlock(), or leave mode at its default, inline.' })
    return outboxRoute(interlock, SETTLE_MS)
  }
  return gateRoute(interlock ? interlock.gate : (source as Gate))
}

function isInterlock(source: InterlockSource): source is Interlock {
  return 'outbox' in source
}

function gateRoute(gate: Gate): EffectRoute {
  const carryOn = async (id: string, fallback: SubmitOutcome): Promise<SubmitOutcome> => {
    // This workflow is the one process working on its effects (DBOS runs a workflow once per executor), as recovery assumes.
    const report = await gate.recover({ filter: (s) => s.effect.id === id })
    const mine = report.effects.find((e) => e.effectId === id)
    if (mine?.outcome) return mine.outcome
    if (mine?.error && fallback.status === 'in_flight') return { ...fallback, reason: `could not be carried on: ${mine.error}` }
    return fallback
  }
  return {
    store: gate.store,
    async submit(input) {
      const id = effectId(input)
      const before = await gate.store.get(id)
      const o = await gate.submit(input)
      // Journaled by an earlier run of this step, one that died with it in flight: carry it on, by its tier.
      // A new effect left in flight has spent its tries; the wait carries it on later.
      if (!before || o.status !== 'in_flight' || o.notBefore) return o
      return carryOn(id, o)
    },
    async carry(id, now) {
      const o = await current(gate.store, id)
      // HELD until an operator's release makes it AUTHORIZED (`interlock outbox release`); a return waits for its time.
      if (o.status !== 'in_flight' || (o.notBefore && Date.parse(o.notBefore) > now)) return o
      return carryOn(id, o)
    },
  }
}

/**
 * The relays carry the effect on; this side proposes it and waits a little
 * for them (the outbox's own wait, woken by the store's notifications), then
 * says where it stands: the workflow waits for longer ones, durably.
 */
function outboxRoute(interlock: Interlock, settleMs: number): EffectRoute {
  const store = interlock.store
  const settled = async (id: string): Promise<SubmitOutcome> => {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), settleMs)))
    try {
      return (await Promise.race([interlock.outbox.result(id), late])) ?? (await current(store, id))
    } finally {
      clearTimeout(timer)
    }
  }
  return {
    store,
    async submit(input) {
      return settled((await interlock.outbox.submit(input)).effectId)
    },
    carry: (id) => settled(id),
  }
}

async function current(store: Store, id: string): Promise<SubmitOutcome> {
  const snap = await store.get(id)
  if (!snap) return { status: 'in_flight', effectId: id, state: 'PROPOSED', reason: 'not in the journal yet' }
  return outcomeOf(snap)
}
