/**
 * The target port: what the gate needs from anything with a side effect.
 *
 * Declaring the tier is the integration:
 * - tier 1: `apply` is idempotent under the effect id (an idempotency key);
 *   after a crash in flight the gate re-applies with the same id.
 * - tier 2: `query` tells whether the effect already happened; after a crash
 *   in flight the gate asks, then re-applies only if not found.
 * - tier 3: neither; a crash in flight makes the effect AMBIGUOUS.
 *
 * `apply` reports wire-level trouble by throwing a DispatchFault (errors.ts) so
 * the gate can decide by tier; any other error counts as an unknown outcome.
 */
import type { JsonObject } from '../canonical-json.js'
import type { Effect, Premises, Receipt, Tier } from '../effect.js'
import { InputError } from '../errors.js'

export interface ApplyContext {
  /** 1 for the first dispatch, more for re-applies (retries or recovery). */
  attempt: number
  /** True when this apply is recovery's re-apply of an effect found DISPATCHED. */
  recovering: boolean
  signal?: AbortSignal
  /**
   * Outbox relays: true while this process still holds the effect's lease.
   * Ask it synchronously right before the write that could change the
   * service, and send nothing when it says no (throw a DispatchFault of kind
   * 'fenced'). The built-in targets ask it from inside the HTTP client, just
   * before the request is written (http/fence.ts). Absent for inline gates.
   */
  fence?: () => boolean
  /**
   * When the effect last entered DISPATCHED (ms since the epoch): no request
   * for it left before then, so a re-apply can tell how old an idempotency key
   * may be at most (a Stripe key may be pruned after 24 hours).
   */
  dispatchedAt?: number
  /** As QueryContext.quietSince: when this process began dispatching the effect. */
  quietSince?: number
  /**
   * True for an operator's redispatch of an AMBIGUOUS effect (`outbox resolve
   * --redispatch`): requests for it left before, at a time not known here
   * (dispatchedAt is then absent).
   */
  resent?: boolean
  /**
   * Request headers a wrapper asks the target to send with the effect
   * (notarized.ts: the effect id and attempt number a notarized service
   * reads). Targets that send HTTP requests add them; others ignore them.
   */
  headers?: Readonly<Record<string, string>>
}

/** What a tier-2 query is told about the effect it asks after. */
export interface QueryContext {
  /** When the effect last entered DISPATCHED (ms since the epoch), when known. */
  dispatchedAt?: number
  /**
   * When this process began dispatching the effect (ms since the epoch): any
   * request for it that another process sent left before then (that process
   * died, or lost its lease and is fenced). With the target's own sends
   * since, it tells a service whose answers lag behind its writes (a search
   * index) how long a "not found" is not yet to be believed.
   */
  quietSince?: number
}

/**
 * What a read-only probe learned (`interlock check`). A probe never changes
 * anything anywhere: it reads an account, a repository, a bucket, a table's
 * catalogue. It throws when the service cannot be reached at all.
 */
export interface ProbeResult {
  /** The service answered, accepted the credential, and what the target needs is there. */
  ok: boolean
  /** What was probed and what came back, naming no secret. */
  detail: string
  /** What to do when not ok. */
  fix?: string
  /** The service refused the credential (401, invalid_auth, ...): reported on the credentials check. */
  credentialRefused?: boolean
  /** ok, but with a caveat worth a look (e.g. a key that cannot read what the probe reads). */
  warn?: boolean
  /** Whether the declared tier can be honoured, when the probe learned it (e.g. a unique constraint). */
  tier?: { ok: boolean; detail: string; fix?: string }
  /**
   * Further rows, one per thing the target is made of that the probe found
   * (an MCP server's tools, each with its tier and why). `id` is the row
   * id's tail after `targets.<name>.` (e.g. `tools.edit_file`); a failing
   * row whose id is a key path under the target is a mistake in
   * interlock.toml (`config: true`).
   */
  rows?: ProbeRow[]
}

export interface ProbeRow {
  id: string
  name: string
  status: 'pass' | 'warn' | 'fail'
  detail: string
  fix?: string
  /** The row names a key of interlock.toml that is wrong (an unknown tool declared). */
  config?: boolean
}

/**
 * What became of a COMMITTED effect since the service answered, for services
 * whose answer is not final (a Stripe refund `pending` that later fails).
 */
export interface LaterOutcome {
  /** The service's word for where it stands now (a refund's status). */
  status: string
  /** Undone at the service after all (a refund that failed): an operator must act. */
  failed: boolean
  /** Still not final at the service: asked again by the next run. */
  pending: boolean
  /** One line naming the effect's object at the service and what happened, naming no secret. */
  detail: string
}

/** A compensating effect on the same target: the gate gives it its own id and links it to the original. */
export interface Compensation {
  action: string
  args: JsonObject
  premises?: Premises
}

export interface EffectTarget {
  readonly name: string
  /** The target's tier; `tierOf`, when present, decides per action. */
  readonly tier: Tier
  /**
   * Optional: the tier of one action, for a target whose actions differ (an
   * MCP server's tools, each declared or annotated on its own). Called at
   * submit; the tier it gives is journaled with the proposal, so recovery and
   * relays never ask again. Throws an InputError for an action the target
   * does not take through the gate.
   */
  tierOf?(action: string): Tier
  /**
   * Optional: refuse bad arguments for `action` with an InputError naming them, so
   * the gate can refuse at submit, before anything is journaled or dispatched.
   */
  validateArgs?(action: string, args: JsonObject): void
  /** Read what the decision rests on, at decision time. Optional: callers may pass premises themselves. */
  capture?(action: string, args: JsonObject): Promise<Premises>
  /** Violations of the premises against the world now; [] when they still hold. */
  validatePremises(effect: Effect): Promise<string[]>
  /** Do the thing. Must carry the effect id to the service (key, trailer, metadata). */
  apply(effect: Effect, ctx: ApplyContext): Promise<Receipt>
  /** Tier 2: the receipt when the effect already happened, or null when it did not. */
  query?(effect: Effect, ctx?: QueryContext): Promise<Receipt | null>
  /**
   * The notary this target sends through (notarized.ts), as the journal
   * records it: written into each DISPATCHED record, so that recovery knows
   * the effect went through a notary even when the config no longer says so
   * (notary/dispatched-through.ts). Absent for a target without a notary.
   */
  readonly notary?: string
  /**
   * The effect that undoes a committed one (e.g. a revert commit, chat.delete),
   * submitted through the same gate and policy as a new, linked effect.
   * Absent when the effect cannot be undone; then `notCompensable` says why.
   */
  compensation?(effect: Effect, receipt: Receipt): Compensation | Promise<Compensation>
  /** Why this target's effects cannot be undone (e.g. "a sent email cannot be recalled"). */
  readonly notCompensable?: string
  /**
   * Optional, read-only: for a COMMITTED effect whose receipt says the service
   * had not finished it (a Stripe refund answered `pending`), what became of
   * it; null when the receipt is final and there is nothing to ask.
   * `interlock reconcile-effects` asks it for recently committed effects.
   */
  laterOutcome?(effect: Effect, receipt: Receipt): Promise<LaterOutcome | null>
  /** Optional: a read-only look at the service for `interlock check`; see ProbeResult. */
  probe?(signal?: AbortSignal): Promise<ProbeResult>
  /** Optional: what to check when the probe got no answer at all (default: the address, and the network between). */
  readonly unreachableHint?: string
  close?(): Promise<void>
}

/** The tier an effect of `action` on `target` is journaled with: per action where the target says, else the target's. */
export function tierFor(target: EffectTarget, action: string): Tier {
  const tier = target.tierOf ? target.tierOf(action) : target.tier
  if (tier === 2 && typeof target.query !== 'function') {
    throw new InputError(`target ${target.name}: action ${action} is tier 2, but the target cannot be asked whether an effect happened (no query())`)
  }
  return tier
}

/** Refuses a target whose tier it cannot honour (a tier-2 target without `query`). */
export function assertTarget(target: EffectTarget): void {
  if (![1, 2, 3].includes(target.tier)) {
    throw new InputError(`target ${target.name}: tier must be 1, 2 or 3 (got ${String(target.tier)})`)
  }
  if (target.tier === 2 && typeof target.query !== 'function') {
    throw new InputError(`target ${target.name}: a tier-2 target must implement query(); without it declare tier 3`, {
      hint: 'Give the target a way to ask whether the effect already happened, or declare it tier 3.',
    })
  }
  if (typeof target.apply !== 'function' || typeof target.validatePremises !== 'function') {
    throw new InputError(`target ${target.name}: must implement apply() and validatePremises()`)
  }
}
