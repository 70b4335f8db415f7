/**
 * `interlock reconcile-effects`: a DBA's sweep of a store for effects left in
 * flight past a grace period, resolved by docs/design.md's recovery table (the one
 * in recovery.ts: tier 1 re-applied with the same key, tier 2 queried then
 * committed or re-applied, tier 3 marked AMBIGUOUS and never re-sent).
 *
 * Safe under cron: one run at a time per store (lock.ts); a second run finds
 * the lock taken and reports `already-running`, which is not a failure.
 * Safe beside live work: effects younger than the grace period are left to
 * whoever is working on them, and `skip` (e.g. a relay's live lease) leaves
 * others alone.
 *
 * HELD effects whose recorded releases already form a quorum (a release
 * killed between its signature and the AUTHORIZED record) are authorized and
 * dispatched like the rest; the others are reported as waiting for operators.
 *
 * Then a second, read-only sweep (later-outcomes.ts): COMMITTED effects of the
 * last `laterWithinMs` whose service had not finished them when it answered
 * (a Stripe refund `pending`) are asked again, and those that failed since are
 * reported.
 *
 * The outcome is one of six, each with its own exit code, so cron can alert
 * on each, the first that applies: effects whose journal authorizes them
 * without the policy or a quorum, refused as a relay refuses them (5);
 * committed effects failed later at the service (11), some tier 1 or 2 effects could not be finished (1), AMBIGUOUS
 * effects wait for an operator (10), clean (0); already running (0).
 */
import type { OperatorConfig, StoreConfig } from '../config/types.js'
import type { KeyPair } from '../crypto/keys.js'
import type { EffectSnapshot } from '../effect.js'
import { ExitCode } from '../errors.js'
import { Gate } from '../gate.js'
import type { RetryOptions } from '../gate-context.js'
import type { Policy } from '../policy.js'
import type { RecoveryReport } from '../recovery.js'
import type { Store } from '../stores/store.js'
import type { EffectTarget } from '../targets/target.js'
import type { RuleSource } from '../outbox/release-check.js'
import type { SendAuthority } from '../relay/send-check.js'
import { laterOutcomes, type LaterOutcomes } from './later-outcomes.js'
import { reconcileClaims } from './leases.js'
import { tryReconcileLock } from './lock.js'

export type ReconcileStatus = 'clean' | 'ambiguous' | 'unfinished' | 'later-failed' | 'refused' | 'already-running'

export interface ReconcileOptions {
  store: Store
  /** Which store, for the lock. */
  storeConfig: StoreConfig
  targets: Iterable<EffectTarget>
  policy?: Policy
  /** The trusted operators, whose recorded releases may complete a held effect's quorum (the rules come from `policy`). */
  operators?: readonly OperatorConfig[]
  retry?: Partial<RetryOptions>
  sleep?: (ms: number) => Promise<void>
  /** Signs every record it journals (the relay's key, trusted under the relay's id): Gate's `signing`. */
  signing?: { key: KeyPair; id?: string }
  /** Grace period: only effects whose last record is at least this old. */
  olderThanMs: number
  /** Effects worked on at once per target. */
  concurrency: number
  limit?: number
  dryRun?: boolean
  /** True leaves the effect alone (someone live holds it). */
  skip?: (snap: EffectSnapshot) => boolean | Promise<boolean>
  onProgress?: (done: number, total: number) => void
  now?: () => number
  /** The clock of reconcile's lease deadline (default performance.now); it keeps running while the process is stopped. */
  monotonic?: () => number
  /** Ask again about COMMITTED effects created this recently whose service had not finished them (ms; 0: not at all). Default 30 days. */
  laterWithinMs?: number
}

/** A failed refund comes back within days; a month covers the slow rails. */
export const LATER_WITHIN_MS = 30 * 24 * 60 * 60 * 1000

export interface ReconcileResult {
  status: ReconcileStatus
  exitCode: ExitCode
  /** One line for people and logs. */
  message: string
  /** Where the lock lives. */
  lock?: string
  /** Absent when another run holds the lock. */
  report?: RecoveryReport
  /** After the run (a dry run: what it would leave): effects waiting for a person. */
  waiting: { ambiguous: number; held: number }
  /** Effects handled that are still in flight (errors, tries ran out): not clean. */
  unfinished: number
  /** COMMITTED effects asked about again (later-outcomes.ts); absent when another run holds the lock. */
  later?: LaterOutcomes
  /** Notices ([[notify]]) journaled by this run, and those that could not be. */
  notified?: { proposed: number; errors: number }
}

export async function reconcileEffects(opts: ReconcileOptions): Promise<ReconcileResult> {
  const lock = await tryReconcileLock(opts.storeConfig)
  if (!lock) {
    return {
      status: 'already-running',
      exitCode: ExitCode.OK,
      message: 'another reconcile-effects is running on this store; nothing done',
      waiting: { ambiguous: 0, held: 0 },
      unfinished: 0,
    }
  }
  // Used twice (the gate, then the later-outcome sweep): an iterator would be spent by the first.
  const targets = [...opts.targets]
  // A dry run writes nothing, leases included: it may list effects a live relay is working on.
  const claims = opts.dryRun ? undefined : reconcileClaims(opts.store, opts.monotonic)
  const gate = new Gate({
    store: opts.store,
    targets,
    policy: opts.policy,
    retry: opts.retry,
    sleep: opts.sleep,
    now: opts.now,
    signing: opts.signing,
    // Sends only while its lease is live (leases.ts); a dry run applies nothing.
    stillHeld: (id) => !claims || claims.live(id),
  })
  try {
    const skip = opts.skip
    const report = await gate.recover({
      olderThanMs: opts.olderThanMs,
      concurrency: opts.concurrency,
      limit: opts.limit,
      dryRun: opts.dryRun,
      filter: skip && (async (s) => !(await skip(s))),
      // Only the effects it will act on are leased (too recent, over the limit, waiting for operators: not touched).
      lease: claims && ((acting) => claims.take(acting)),
      releases: opts.operators ? { operators: opts.operators } : undefined,
      // A shared store: whatever its journal says was authorized must have been, by policy or quorum, before anything is sent.
      sendCheck: sendAuthority(opts),
      onProgress: opts.onProgress,
      now: opts.now,
    })
    // The open states it reports only: counted from the effects not settled, not the whole history.
    const counts = await opts.store.countByState(['AMBIGUOUS', 'HELD'])
    const would = (plan: string) => (opts.dryRun ? report.effects.filter((e) => e.plan === plan).length : 0)
    const waiting = { ambiguous: counts.AMBIGUOUS + would('mark-ambiguous'), held: counts.HELD - would('authorize') }
    // An effect someone else moved first (an operator's release, a relay) is theirs to finish, not left over by this run.
    const unfinished = report.effects.filter((e) => e.action === 'error' || (e.outcome?.status === 'in_flight' && e.action !== 'moved-on')).length
    const refused = report.effects.filter((e) => e.action === 'refused').length
    const withinMs = opts.laterWithinMs ?? LATER_WITHIN_MS
    const later = await laterOutcomes(opts.store, targets, { withinMs, now: (opts.now ?? Date.now)() })
    const v = verdict(waiting.ambiguous, unfinished, later.failed.length, opts.dryRun ?? false, refused)
    // HELD effects waiting for releases are the operators' normal queue, not a failure: said, not signalled by the exit code.
    if (waiting.held > 0) v.message += `; ${waiting.held} HELD effect${waiting.held === 1 ? '' : 's'} ${opts.dryRun ? 'would be ' : ''}waiting for operators' releases`
    return { ...v, lock: lock.where, report, waiting, unfinished, later }
  } finally {
    // Targets are the caller's to close. Unfinished effects go back to the relays at once.
    await claims?.releaseAll().catch(() => {})
    await lock.release()
  }
}

function verdict(ambiguous: number, unfinished: number, laterFailed: number, dryRun: boolean, refused: number): Pick<ReconcileResult, 'status' | 'exitCode' | 'message'> {
  const would = dryRun ? 'would be ' : ''
  if (refused > 0) {
    return {
      status: 'refused',
      exitCode: ExitCode.INTEGRITY,
      message: `${refused} effect${refused === 1 ? ' was' : 's were'} refused: ${refused === 1 ? 'its' : 'their'} journal authorizes ${refused === 1 ? 'it' : 'them'} without the operators' policy or quorum (someone wrote to the store behind Interlock); nothing was sent, and those a rule in force holds are held again for operators. Run \`interlock outbox verify\``,
    }
  }
  if (laterFailed > 0) {
    return {
      status: 'later-failed',
      exitCode: ExitCode.LATER_FAILED,
      message: `${laterFailed} committed effect${laterFailed === 1 ? '' : 's'} failed at the service since (a refund that failed: the money did not reach the customer); an operator must act`,
    }
  }
  if (unfinished > 0) {
    return {
      status: 'unfinished',
      exitCode: ExitCode.FAILURE,
      message: `${unfinished} effect${unfinished === 1 ? '' : 's'} could not be finished and stay in flight; the next run tries again`,
    }
  }
  if (ambiguous > 0) {
    return {
      status: 'ambiguous',
      exitCode: ExitCode.AMBIGUOUS,
      message: `${ambiguous} AMBIGUOUS effect${ambiguous === 1 ? '' : 's'} ${would}waiting for an operator to resolve`,
    }
  }
  return { status: 'clean', exitCode: ExitCode.OK, message: dryRun ? 'nothing would be left in flight' : 'nothing left in flight' }
}

/** The relay's check, when the sweep knows the rules (a RulesPolicy) and who may release. */
function sendAuthority(opts: ReconcileOptions): SendAuthority | undefined {
  const policy = opts.policy as (Policy & Partial<RuleSource>) | undefined
  if (!policy || typeof policy.rule !== 'function') return undefined
  return { policy: policy as Policy & RuleSource, operators: opts.operators ?? [] }
}
