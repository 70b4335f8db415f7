/**
 * The gate: every side effect goes through `submit`, which journals it
 * durably, re-checks its premises, dispatches it by its target's tier and
 * records the outcome; `recover` finishes what a crash interrupted.
 */
import type { Span } from '@opentelemetry/api'
import { effectAttributes, inSpan, submitParent, traceOfSpan } from './tracing/spans.js'
import { sealer } from './crypto/seal.js'
import type { KeyPair } from './crypto/keys.js'
import { toEffect, type Effect, type EffectInput, type JsonObject, type Premises, type Tier } from './effect.js'
import { InputError } from './errors.js'
import { targetOf, type GateContext, type RetryOptions } from './gate-context.js'
import type { SubmitOutcome } from './outcome.js'
import { proposeAndAdvance } from './propose.js'
import { allowAll, type Policy } from './policy.js'
import { requirePolicy } from './policy/required.js'
import { recover, type RecoverOptions, type RecoveryReport } from './recovery.js'
import { JournalSecrets } from './secrets/journal-secrets.js'
import { redactingStore } from './secrets/redacting-store.js'
import { sealingStore } from './stores/sealing-store.js'
import type { Store } from './stores/store.js'
import { assertTarget, tierFor, type EffectTarget } from './targets/target.js'

export interface GateOptions {
  store: Store
  targets?: Iterable<EffectTarget>
  policy?: Policy
  retry?: Partial<RetryOptions>
  sleep?: (ms: number) => Promise<void>
  /** Wall clock in epoch milliseconds (default Date.now): when a returned effect may be sent again. */
  now?: () => number
  /**
   * For callers that work under leases (reconcile-effects): whether this
   * process still holds the effect. Asked before every apply and by the
   * target right before its write (targets/fence.ts); false sends nothing.
   */
  stillHeld?: (effectId: string) => boolean
  /**
   * Values never to journal, besides the `${VAR}` values targets made from
   * interlock.toml bring along themselves (secrets/journal-secrets.ts).
   */
  secrets?: readonly string[]
  /**
   * Signs every record this gate journals, its proposals included
   * (crypto/record-signature.ts), so `outbox verify` can tell them from
   * records written by anyone else with access to the store. The relay's key
   * (`[relay] key`), trusted under `id` (default: the key's name, as
   * `[relay] id` names it for verify).
   */
  signing?: { key: KeyPair; id?: string }
}

export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 5, backoffMs: 200, maxWaitMs: 30_000 }

export class Gate {
  private readonly ctx: GateContext
  private readonly policyGiven: Policy | undefined
  private readonly secrets: JournalSecrets
  /** Effects this process is working on: a second submit joins the first instead of racing it. */
  private readonly running = new Map<string, Promise<SubmitOutcome>>()

  constructor(opts: GateOptions) {
    this.policyGiven = opts.policy
    this.secrets = new JournalSecrets(opts.secrets)
    this.ctx = {
      // Every append passes the secrets guard: nothing this gate writes can journal a secret;
      // then, given a key, each commit is sealed as it is journaled.
      store: redactingStore(opts.signing ? sealingStore(opts.store, sealer({ key: opts.signing.key, id: opts.signing.id, role: 'relay' })) : opts.store, this.secrets),
      targets: new Map(),
      policy: opts.policy ?? allowAll,
      retry: { ...DEFAULT_RETRY, ...opts.retry },
      sleep: opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      now: opts.now ?? Date.now,
      stillHeld: opts.stillHeld,
    }
    const targets = [...(opts.targets ?? [])]
    // All at once first, so the error names every rule and target it concerns.
    requirePolicy('this Gate', targets, opts.policy)
    for (const t of targets) this.register(t)
  }

  get store(): Store {
    return this.ctx.store
  }

  /**
   * Adds a target; refuses one that cannot honour its tier (a tier-2 target
   * without query), and one from an interlock.toml whose policy rules this
   * gate was not given (policy/required.ts).
   */
  register(target: EffectTarget): this {
    assertTarget(target)
    if (this.ctx.targets.has(target.name)) throw new InputError(`a target named ${JSON.stringify(target.name)} is already registered`)
    requirePolicy('this Gate', [target], this.policyGiven)
    this.secrets.addTarget(target)
    this.ctx.targets.set(target.name, target)
    return this
  }

  target(name: string): EffectTarget {
    return targetOf(this.ctx, name)
  }

  /** Reads the premises an effect will rest on, through its target, at decision time. */
  async capture(target: string, action: string, args: JsonObject): Promise<Premises> {
    const t = targetOf(this.ctx, target)
    if (!t.capture) throw new InputError(`target ${target} cannot capture premises; pass them with the effect`)
    // Scrubbed here, as submit scrubs premises passed in: what the agent holds is what is journaled.
    return this.secrets.scrub(await t.capture(action, args))
  }

  /**
   * Journals the effect and carries it as far as it can go: two durable
   * commits for an effect no rule holds (PROPOSED, AUTHORIZED and DISPATCHED
   * after its premises are checked; then its outcome: propose.ts). Submitting
   * an effect id again returns the existing outcome and never applies twice,
   * also while the first submit is still in flight.
   */
  submit(input: EffectInput): Promise<SubmitOutcome> {
    // The parent: the trace the caller names (an MCP call's _meta), else the span active here (a framework's).
    const parent = submitParent(input.trace)
    return inSpan(
      'interlock.submit',
      {},
      async (span) => {
        // Journaled with the effect: whoever carries it on later (recovery, a relay) continues this trace.
        const trace = traceOfSpan(span, input.trace?.tracestate) ?? input.trace
        const outcome = await this.submitNow(trace ? { ...input, trace } : input, span)
        span?.setAttribute('interlock.outcome', outcome.status)
        const rule = (outcome as { rule?: unknown }).rule
        if (typeof rule === 'string') span?.setAttribute('interlock.rule', rule)
        return outcome
      },
      { parent },
    )
  }

  private submitNow(input: EffectInput, span: Span | undefined): Promise<SubmitOutcome> {
    let effect: Effect
    let tier: Tier
    try {
      // Refused when its args hold a secret; premises scrubbed, so what runs is what is journaled.
      effect = this.secrets.admit(toEffect(input))
      const target = targetOf(this.ctx, effect.target)
      // Bad arguments are the caller's mistake: refuse them before anything is journaled.
      target.validateArgs?.(effect.action, effect.args)
      tier = tierFor(target, effect.action)
    } catch (err) {
      return Promise.reject(err)
    }
    span?.setAttributes(effectAttributes(effect, tier))
    const running = this.running.get(effect.id)
    if (running) return running
    const work = proposeAndAdvance(this.ctx, effect, tier)
    this.running.set(effect.id, work)
    const forget = () => this.running.delete(effect.id)
    work.then(forget, forget)
    return work
  }

  /**
   * Finishes what a crash interrupted (docs/design.md's recovery table), in one
   * journal read. Options narrow it for a sweep of a shared store
   * (reconcile-effects): grace period, limit, concurrency, dry run, filter.
   */
  recover(options: RecoverOptions = {}): Promise<RecoveryReport> {
    return inSpan('interlock.recover', {}, async (span) => {
      const report = await recover(this.ctx, (id) => this.running.has(id), options)
      span?.setAttributes({ 'interlock.recovered': report.effects.length, 'interlock.in_flight': report.inFlight })
      return report
    })
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.running.values()])
    for (const t of this.ctx.targets.values()) await t.close?.()
  }
}
