/**
 * Outbox mode: the agent's side of a shared store drained by relays.
 *
 * `submit` journals the effect PROPOSED and returns as soon as that is
 * durable. The agent only proposes: whether the effect may go on is decided
 * by the trusted side (docs/design.md, "The trust boundary"). A relay (`interlock
 * relay`) claims it, evaluates the operators' policy from its own config
 * (HELD for a release, or AUTHORIZED), re-checks its premises and dispatches
 * the journaled args. `handle.result()` waits until
 * the effect settles (COMMITTED, REJECTED, FAILED), becomes AMBIGUOUS, or is
 * HELD for operators: woken by the store's notifications where it has them
 * (PostgreSQL LISTEN/NOTIFY), and by polling always (SQLite; a missed
 * notification).
 *
 * The inline Gate (gate.ts) is unchanged: it journals and dispatches in the
 * caller's process.
 */
import type { Span } from '@opentelemetry/api'
import { effectAttributes, inSpan, submitParent, traceOfSpan } from '../tracing/spans.js'
import { toEffect, type EffectInput } from '../effect.js'
import { InputError } from '../errors.js'
import { proposal, targetOf, type GateContext } from '../gate-context.js'
import { journalOutcome, outcomeOf, type SubmitOutcome } from '../outcome.js'
import type { Store } from '../stores/store.js'
import { assertTarget, tierFor, type EffectTarget } from '../targets/target.js'
import type { State } from '../lifecycle.js'
import { JournalSecrets } from '../secrets/journal-secrets.js'
import { redactingStore } from '../secrets/redacting-store.js'
import { ResultWaiter } from './result-waiter.js'

export interface OutboxOptions {
  store: Store
  /** The targets effects may name: their tier is journaled, their argument checks run at submit. */
  targets: Iterable<EffectTarget>
  /** Longest wait between looks at a pending result (default 250 ms; with notifications 2 s). */
  pollMs?: number
}

export interface OutboxHandle {
  effectId: string
  /** Where the effect stood when submit returned. */
  state: State
  /** False when the effect was already journaled (the same decision submitted again): nothing was appended. */
  created: boolean
  /** Waits until the effect settles, becomes AMBIGUOUS, or is HELD for operators; one COMMITTED before this submit says `via: 'journal'`. */
  result(): Promise<SubmitOutcome>
}

export class Outbox {
  private readonly store: Store
  private readonly targets = new Map<string, EffectTarget>()
  private readonly waiter: ResultWaiter

  constructor(opts: OutboxOptions) {
    for (const t of opts.targets) {
      assertTarget(t)
      if (this.targets.has(t.name)) throw new InputError(`a target named ${JSON.stringify(t.name)} is already registered`)
      this.targets.set(t.name, t)
    }
    // A proposal holding a secret is refused, its premises scrubbed (secrets/journal-secrets.ts).
    this.store = redactingStore(opts.store, JournalSecrets.of(this.targets.values()))
    this.waiter = new ResultWaiter(this.store, opts.pollMs ?? (this.store.subscribe ? 2_000 : 250))
  }

  /** Journals the effect (durably) and returns its handle; submitting it again returns the same effect's handle. */
  submit(input: EffectInput): Promise<OutboxHandle> {
    // As Gate.submit: a child of the caller's trace, journaled with the proposal for the relay that sends it.
    return inSpan(
      'interlock.submit',
      { 'interlock.mode': 'outbox' },
      async (span) => {
        const trace = traceOfSpan(span, input.trace?.tracestate) ?? input.trace
        const handle = await this.propose(trace ? { ...input, trace } : input, span)
        span?.setAttribute('interlock.state', handle.state)
        return handle
      },
      { parent: submitParent(input.trace) },
    )
  }

  private async propose(input: EffectInput, span: Span | undefined): Promise<OutboxHandle> {
    const effect = toEffect(input)
    const target = targetOf({ targets: this.targets } as GateContext, effect.target)
    target.validateArgs?.(effect.action, effect.args)
    const tier = tierFor(target, effect.action)
    span?.setAttributes(effectAttributes(effect, tier))
    // PROPOSED only: the policy is the relay's to apply, from the operators' config, never the submitter's.
    const [proposed] = await this.store.append([
      { effectId: effect.id, from: null, to: 'PROPOSED', data: proposal(effect, tier), effect, tier },
    ])
    const before = proposed!.ok ? null : proposed!.current
    const state: State = before?.state ?? 'PROPOSED'
    // Committed before this submit: the journal answers, and says nothing was sent for it.
    const result = before?.state === 'COMMITTED' ? () => Promise.resolve(journalOutcome(before)) : () => this.result(effect.id)
    return { effectId: effect.id, state, created: proposed!.ok, result }
  }

  /** The outcome of any journaled effect, once it settles (see OutboxHandle.result). */
  result(effectId: string): Promise<SubmitOutcome> {
    return this.waiter.wait(effectId).then(outcomeOf)
  }

  /** Stops waiting: pending result() calls reject. */
  async close(): Promise<void> {
    await this.waiter.close()
  }
}
