/**
 * Recovery after a crash: one read of what is in flight (store.scanInFlight:
 * each open effect's own records, verified and chained to their neighbours,
 * never the settled history around them), then docs/design.md's table for
 * each effect found:
 *
 * | found      | tier 1                 | tier 2                              | tier 3    |
 * |------------|------------------------|-------------------------------------|-----------|
 * | PROPOSED   | continue the normal path (premises re-checked)                          |
 * | HELD       | releases recorded form a quorum: AUTHORIZED, then on as above; else wait |
 * | AUTHORIZED | re-check premises, dispatch (nothing was sent yet); a returned effect    |
 * |            | (DISPATCHED → AUTHORIZED, returned.ts) only once its notBefore has passed |
 * | DISPATCHED | re-apply, same key     | query: found → COMMITTED, else re-apply | AMBIGUOUS |
 * | AMBIGUOUS  | wait for an operator                                                     |
 *
 * This table lives here only: `gate.recover()` (a process resuming its own
 * work) and `interlock reconcile-effects` (a DBA's sweep of a shared store)
 * both run it, the latter with options: a grace period, a limit, bounded
 * concurrency per target, a dry run, and a filter (e.g. a live relay lease).
 *
 * HELD: `outbox release` journals the release that completes a quorum, then
 * HELD → AUTHORIZED in a second record; a crash between the two strands the
 * effect with every signature it needs. Recovery finishes it when given who
 * may release (`releases`: the trusted operators and the rules), judged as
 * outbox/recorded-quorum.ts says (expiry as of when the quorum formed).
 * Without a quorum, or without `releases`, a HELD effect waits for operators.
 *
 * Effects this process is itself still working on are left alone. Recovery
 * assumes no other live process is working on the effects it passes to
 * `advance` (inline mode); the filter is where callers exclude the ones that
 * someone else holds.
 */
import { trace } from '@opentelemetry/api'
import { contextOfTrace, effectAttributes, inSpan } from './tracing/spans.js'
import { advance } from './advance.js'
import type { EffectSnapshot, Tier } from './effect.js'
import { transition, type GateContext } from './gate-context.js'
import type { State } from './lifecycle.js'
import { cannotAsk } from './notary/dispatched-through.js'
import { noReleaseYet, recordedQuorum, recoveredAuthorization, type RecordedQuorum, type ReleaseAuthority } from './outbox/recorded-quorum.js'
import type { RuleSource } from './outbox/release-check.js'
import { journalOutcome, outcomeOf, type OutcomeStatus, type SubmitOutcome } from './outcome.js'
import { checkBeforeSend, heldAgainData, type SendAuthority } from './relay/send-check.js'
import { waitsUntilLater } from './returned.js'
import type { InFlightScan, JournalRecord } from './stores/store.js'

export type RecoveryAction =
  /** Continued from PROPOSED or AUTHORIZED: nothing had been sent. */
  | 'resumed'
  /** HELD with a complete quorum of recorded releases: AUTHORIZED, then carried on like 'resumed'. */
  | 'authorized'
  /** Someone else moved the effect first (e.g. an operator's release or denial): nothing done here. */
  | 'moved-on'
  /** Tier 1: sent again with the same idempotency key. */
  | 're-applied'
  /** Tier 2: the target said it had already happened. */
  | 'found-by-query'
  /** Tier 2: the target said it had not happened; sent now. */
  | 'applied-after-query'
  /** Tier 3, or a tier 1 or 2 target that said it cannot know: an operator must resolve it. */
  | 'marked-ambiguous'
  /** The target said it did not apply it and asked for a longer wait, or to start over: back to AUTHORIZED (returned.ts). */
  | 'returned'
  /** HELD or AMBIGUOUS: waits for a person. */
  | 'waiting'
  /** Dry run: `plan` says what would be done; nothing was. */
  | 'planned'
  /** Its journal does not authorize it (a sweep of a shared store, `sendCheck`): nothing sent, nothing written. */
  | 'refused'
  /** Recovery of this effect failed; it stays where it was. */
  | 'error'

/** What the table says to do with an effect, before doing it. */
export type RecoveryPlan = 'resume' | 'authorize' | 're-apply' | 'query' | 'mark-ambiguous' | 'wait'

/** A HELD effect's releases as recovery judged them. */
export interface QuorumFound {
  rule?: string
  /** Distinct operators whose releases count, of those the rule needs (null: the rule is gone). */
  have: number
  need: number | null
  signers?: string[]
  /** The record whose release completed the quorum (plan 'authorize'). */
  completedBy?: { seq: number; at: string }
  /** Why it waits (plan 'wait'): each release that does not count, then the shortfall. */
  reasons?: string[]
}

export interface RecoveredEffect {
  effectId: string
  target: string
  tier: Tier
  found: State
  plan: RecoveryPlan
  action: RecoveryAction
  outcome?: SubmitOutcome
  error?: string
  /** HELD effects: what the recorded releases amount to. */
  quorum?: QuorumFound
  /** Action 'refused': why the journal does not let it go on. */
  refused?: string[]
}

export interface RecoverOptions {
  /** Only effects whose last journal record is at least this old (ms). Default 0: all. */
  olderThanMs?: number
  /** Act on at most this many effects (oldest first); the rest are counted as deferred. Waiting ones do not count. */
  limit?: number
  /** Effects worked on at once per target. Default 1 (one after another, oldest first). */
  concurrency?: number
  /** Say what would be done; write nothing, send nothing. */
  dryRun?: boolean
  /** False leaves the effect alone (counted as skipped), e.g. one a live relay holds. */
  filter?: (snap: EffectSnapshot) => boolean | Promise<boolean>
  /** Called once with the effects chosen and the ids of those to act on (the rest wait for a person), before any is acted on. */
  onChosen?: (chosen: readonly EffectSnapshot[], acting: ReadonlySet<string>) => void | Promise<void>
  /**
   * Takes hold of the effects to act on, after onChosen and before any is
   * acted on (reconcile-effects leases them, so no relay takes one meanwhile);
   * answers the ids it holds, each still as it was read. The others are left
   * alone (counted as filtered): someone else holds them, or moved them since.
   */
  lease?: (acting: readonly EffectSnapshot[]) => Promise<ReadonlySet<string>>
  /**
   * Who may release held effects: the trusted operators and the rules (default:
   * the gate's policy, when it names its rules, as RulesPolicy does). Without
   * it, no HELD effect is authorized by recovery: each waits for operators.
   */
  releases?: { operators: ReleaseAuthority['operators']; rules?: RuleSource }
  /**
   * Check each effect's journal before acting on it, as a relay does
   * (relay/send-check.ts): an authorization the operators' policy and quorum
   * do not stand behind is refused, nothing sent. For sweeps of a shared
   * store (reconcile-effects), where anyone with write access to the
   * database could have forged one; an inline gate recovering its own
   * journal does not need it.
   */
  sendCheck?: SendAuthority
  /** Wall clock for olderThanMs (default Date.now). */
  now?: () => number
  /** Called after each effect is handled. */
  onProgress?: (done: number, total: number) => void
}

export interface RecoveryReport {
  recordsRead: number
  inFlight: number
  effects: RecoveredEffect[]
  /** Final status counts after recovery (in_flight = still unfinished). */
  counts: Partial<Record<OutcomeStatus, number>>
  /** Left alone: younger than olderThanMs (or returned with a notBefore still ahead), refused by the filter, or beyond the limit. */
  skipped: { recent: number; filtered: number; deferred: number }
  dryRun: boolean
  durationMs: number
}

export async function recover(
  ctx: GateContext,
  isRunningHere: (id: string) => boolean,
  opts: RecoverOptions = {},
): Promise<RecoveryReport> {
  const started = performance.now()
  const scan = await ctx.store.scanInFlight()
  const skipped = { recent: 0, filtered: 0, deferred: 0 }
  const nowMs = (opts.now ?? ctx.now ?? Date.now)()
  const cutoff = nowMs - (opts.olderThanMs ?? 0)
  const chosen: EffectSnapshot[] = []
  const plans = new Map<string, Planned>()
  const authority = authorityOf(ctx, opts)
  // The limit counts effects acted on; those waiting for a person are only reported.
  let acting = 0
  for (const snap of scan.effects) {
    if (isRunningHere(snap.effect.id)) continue
    // A returned effect the service asked to wait: too recent until its notBefore, whatever the grace period.
    if ((opts.olderThanMs && Date.parse(snap.updatedAt) > cutoff) || waitsUntilLater(snap, nowMs)) {
      skipped.recent++
      continue
    }
    if (opts.filter && !(await opts.filter(snap))) {
      skipped.filtered++
      continue
    }
    const planned = await planOne(ctx, snap, authority, scan.histories)
    const waits = planned.plan === 'wait'
    if (!waits && opts.limit !== undefined && acting >= opts.limit) {
      skipped.deferred++
      continue
    }
    if (!waits) acting++
    chosen.push(snap)
    plans.set(snap.effect.id, planned)
  }
  const actingOn = (s: EffectSnapshot) => plans.get(s.effect.id)!.plan !== 'wait'
  await opts.onChosen?.(chosen, new Set(chosen.filter(actingOn).map((s) => s.effect.id)))
  if (opts.lease) {
    const held = await opts.lease(chosen.filter(actingOn))
    const kept = chosen.filter((s) => !actingOn(s) || held.has(s.effect.id))
    skipped.filtered += chosen.length - kept.length
    chosen.splice(0, chosen.length, ...kept)
  }

  const results = new Map<string, RecoveredEffect>()
  let done = 0
  const handle = async (snap: EffectSnapshot) => {
    results.set(snap.effect.id, await recoverOne(ctx, snap, plans.get(snap.effect.id)!, opts.dryRun ?? false, opts.sendCheck, scan.histories))
    opts.onProgress?.(++done, chosen.length)
  }
  // One queue per target, each drained by up to `concurrency` workers: a slow or
  // failing target never holds up another, and no target sees more than it allows.
  const byTarget = new Map<string, EffectSnapshot[]>()
  for (const snap of chosen) byTarget.set(snap.effect.target, [...(byTarget.get(snap.effect.target) ?? []), snap])
  const width = Math.max(1, opts.concurrency ?? 1)
  await Promise.all(
    [...byTarget.values()].flatMap((queue) =>
      Array.from({ length: Math.min(width, queue.length) }, async () => {
        for (let snap = queue.shift(); snap; snap = queue.shift()) {
          const s = snap
          // A child of the recover span, linked to the trace that asked for the effect.
          const asked = contextOfTrace(s.effect.trace)
          const links = asked ? [{ context: trace.getSpanContext(asked)! }] : []
          await inSpan('interlock.recover.effect', { ...effectAttributes(s.effect, s.tier), 'interlock.found': s.state }, () => handle(s), { links })
        }
      }),
    ),
  )

  const effects = chosen.map((s) => results.get(s.effect.id)!)
  const counts: RecoveryReport['counts'] = {}
  for (const e of effects) {
    const k: OutcomeStatus = e.outcome?.status ?? (e.found === 'HELD' ? 'held' : e.found === 'AMBIGUOUS' ? 'ambiguous' : 'in_flight')
    counts[k] = (counts[k] ?? 0) + 1
  }
  return {
    recordsRead: scan.recordsRead,
    inFlight: scan.effects.length,
    effects,
    counts,
    skipped,
    dryRun: opts.dryRun ?? false,
    durationMs: performance.now() - started,
  }
}

interface Planned {
  plan: RecoveryPlan
  /** HELD: the recorded releases, judged. */
  quorum?: RecordedQuorum
}

/** The table's answer for one effect; a HELD effect's needs its history (the scan's, else one read). */
async function planOne(ctx: GateContext, snap: EffectSnapshot, authority: ReleaseAuthority | undefined, histories: Histories): Promise<Planned> {
  if (snap.state === 'DISPATCHED') {
    // Sent through a notary the config no longer names: marked AMBIGUOUS, not asked (notary/dispatched-through.ts).
    const target = ctx.targets.get(snap.effect.target)
    if (target && cannotAsk(snap, target)) return { plan: 'mark-ambiguous' }
  }
  if (snap.state !== 'HELD' || !authority) return { plan: planFor(snap.state, snap.tier) }
  // Every release is journaled HELD → HELD with it, so an effect whose last record carries none has none: no read needed.
  if (snap.detail.release === undefined && typeof snap.detail.rule === 'string') return { plan: 'wait', quorum: noReleaseYet(snap.detail.rule, authority) }
  const quorum = recordedQuorum(snap.effect, await historyOf(ctx, snap, histories), authority)
  return { plan: quorum.complete ? 'authorize' : 'wait', quorum }
}

function authorityOf(ctx: GateContext, opts: RecoverOptions): ReleaseAuthority | undefined {
  if (!opts.releases) return undefined
  const rules = opts.releases.rules ?? (isRuleSource(ctx.policy) ? ctx.policy : undefined)
  return rules && { operators: opts.releases.operators, rules }
}

function isRuleSource(p: unknown): p is RuleSource {
  return typeof (p as Partial<RuleSource>).rule === 'function'
}

type Histories = InFlightScan['histories']

/**
 * The effect's records: those the scan read and verified with its snapshot
 * (the snapshot recovery acts on), else read again. An effect that moved
 * since is caught by the compare-and-set of whatever recovery writes, and
 * reconcile's lease gives back one that changed between the scan and it.
 */
async function historyOf(ctx: GateContext, snap: EffectSnapshot, histories: Histories): Promise<JournalRecord[]> {
  const h = histories?.get(snap.effect.id)
  return h && h.at(-1)?.seq === snap.seq ? h : ctx.store.history(snap.effect.id)
}

async function recoverOne(
  ctx: GateContext,
  snap: EffectSnapshot,
  planned: Planned,
  dryRun: boolean,
  sendCheck: SendAuthority | undefined,
  histories: Histories,
): Promise<RecoveredEffect> {
  const { plan } = planned
  const base: Omit<RecoveredEffect, 'action'> = { effectId: snap.effect.id, target: snap.effect.target, tier: snap.tier, found: snap.state, plan }
  if (planned.quorum) base.quorum = quorumFound(planned.quorum)
  if (plan === 'wait') return { ...base, action: 'waiting' }
  try {
    // 'authorize' is itself the quorum check, on the same terms (recorded-quorum.ts).
    if (sendCheck && plan !== 'authorize') {
      const check = checkBeforeSend(snap, await historyOf(ctx, snap, histories), sendCheck)
      if (!check.ok) {
        // A rule in force holds it: held again for operators, as a relay does (relay/send-check.ts).
        if (!dryRun && check.hold && check.snapshot?.state === 'AUTHORIZED') {
          const t = await transition(ctx, check.snapshot, 'HELD', heldAgainData(check.hold, check.reasons))
          return { ...base, action: 'refused', refused: check.reasons, outcome: outcomeOf(t.moved ? t.snap : t.current) }
        }
        return { ...base, action: 'refused', refused: check.reasons }
      }
    }
    if (dryRun) return { ...base, action: 'planned' }
    if (plan === 'authorize' && planned.quorum?.complete) {
      // The operators' decision, completed before the crash, made durable; then the normal path (premises re-checked).
      const t = await transition(ctx, snap, 'AUTHORIZED', recoveredAuthorization(planned.quorum))
      if (!t.moved) return { ...base, action: 'moved-on', outcome: journalOutcome(t.current) }
      return { ...base, action: 'authorized', outcome: await advance(ctx, t.snap, { recovering: true }) }
    }
    const outcome = await advance(ctx, snap, { recovering: true })
    return { ...base, action: actionFor(snap.state, snap.tier, outcome), outcome }
  } catch (err) {
    return { ...base, action: 'error', error: err instanceof Error ? err.message : String(err) }
  }
}

function quorumFound(q: RecordedQuorum): QuorumFound {
  const need = Number.isFinite(q.needed) ? q.needed : null
  if (q.complete) return { rule: q.rule, have: q.signers.length, need, signers: q.signers, completedBy: q.completedBy }
  const found: QuorumFound = { have: q.have, need, reasons: q.reasons }
  if (q.rule !== undefined) found.rule = q.rule
  return found
}

export function planFor(found: State, tier: Tier): RecoveryPlan {
  if (found === 'HELD' || found === 'AMBIGUOUS') return 'wait'
  if (found !== 'DISPATCHED') return 'resume'
  return tier === 1 ? 're-apply' : tier === 2 ? 'query' : 'mark-ambiguous'
}

function actionFor(found: State, tier: Tier, outcome: SubmitOutcome): RecoveryAction {
  if (outcome.status === 'committed' && outcome.via === 'journal') return 'moved-on'
  if (found === 'DISPATCHED' && outcome.status === 'in_flight' && outcome.state === 'AUTHORIZED') return 'returned'
  if (found !== 'DISPATCHED') return 'resumed'
  // Tiers 1 and 2 too, when the target answered that it cannot know (an 'unknowable' fault).
  if (tier === 3 || outcome.status === 'ambiguous') return 'marked-ambiguous'
  if (tier === 1) return 're-applied'
  return outcome.status === 'committed' && outcome.via === 'query' ? 'found-by-query' : 'applied-after-query'
}
