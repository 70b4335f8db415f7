import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { wideFlag } from '../cli/wide-flag.js'
import { durationFlag } from '../cli/duration.js'
import { progressBar } from '../cli/progress.js'
import { DEFAULTS } from '../core/config/defaults.js'
import { LATER_WITHIN_MS, reconcileEffects, type ReconcileResult } from '../core/reconcile/index.js'
import { Notifier } from '../core/notify/notifier.js'
import type { RecoveredEffect } from '../core/recovery.js'
import { requireFullAccess } from '../core/stores/full-access.js'

export default class ReconcileEffects extends BaseCommand<typeof ReconcileEffects> {
  static override summary = 'Resolve effects left in flight: re-apply tier 1, query tier 2, mark tier 3 AMBIGUOUS.'
  static override description = `Finds effects in flight (PROPOSED, AUTHORIZED, DISPATCHED) whose last journal record is older than the grace period and finishes them by their target's tier: tier 1 is re-applied with the same idempotency key; tier 2 is queried, then recorded COMMITTED or re-applied; tier 3 is marked AMBIGUOUS for an operator and never re-sent. Effects a live relay holds a lease on are left alone, and so is an effect its target returned to AUTHORIZED with a time to wait for (a rate limit longer than [gate] max_wait_ms): it counts as too recent until then, whatever the grace period.

HELD effects whose journaled releases already form their rule's quorum (an \`outbox release\` killed after recording the release that completed it, before AUTHORIZED) are authorized and dispatched the same way: the releases must be signed by distinct operators trusted in [[operators]], for the effect's current args and premises, unexpired when the quorum formed (the time of the journal record that completed it), and not replayed. Other HELD effects stay HELD and are reported as waiting for operators, with why.

It leases only the effects it will act on (those past the grace period, within --limit, not waiting for operators), each as a relay would, and gives each back when done: a run with nothing to do writes nothing.

--older-than 0s (or 0) sets no grace period: every effect in flight that no live relay holds a lease on, however recent. Relays hold leases on what they work on, so this is safe beside them; an inline gate (the library sending from the agent's own process) holds none, so beside one it may act on an effect that gate is sending right then (re-applying a tier 1 effect, asking a tier 2 target, marking a tier 3 effect AMBIGUOUS): keep a grace period longer than a send where inline gates share the store.

--dry-run changes nothing, sends nothing, and takes no lease: each effect's plan says what would be done (resume, authorize, re-apply, query, mark-ambiguous, wait).

Then, read-only, COMMITTED effects created within --later-within (default 30d) whose service had not finished them when it answered are asked again: a Stripe refund answered pending or requires_action (GET /v1/refunds/{id}). A refund that failed since (status failed or canceled, with Stripe's failure_reason) means the money did not reach the customer: each is listed with its effect id, and the run exits 11, on every run while the effect is within the window (the journal is not changed: COMMITTED stays COMMITTED). Refunds still pending are counted and asked again next run; --later-within 0 turns the sweep off.

With a [relay] key in interlock.toml, every record it journals is signed with that key, as a relay signs its own.

Safe under cron: a second run started while one is running exits 0 and says so (a lock that dies with its holder: a PostgreSQL advisory lock, or an OS file lock beside the SQLite journal).

Effects whose journal says they were authorized, though the operators' policy holds them and no valid quorum of releases stands behind them (a record forged by someone with write access to the store), are refused as a relay refuses them: nothing is sent, each is listed with why, and one a rule in force holds is held again (AUTHORIZED → HELD) for operators to release or deny.

Exit codes, the first that applies: 5 effects refused because their journal does not authorize them (run \`interlock outbox verify\`); 11 committed effects failed at the service since (a refund that failed); 1 some effects could not be finished (a target down: the next run tries again); 10 AMBIGUOUS effects wait for an operator; 0 nothing left in flight (or another run holds the lock; HELD effects waiting for operators and refunds still pending do not change it); 3, 4, 5 config, store or journal-integrity errors.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --older-than 15m --concurrency 8',
    '<%= config.bin %> <%= command.id %> --dry-run',
    '<%= config.bin %> <%= command.id %> --limit 100 --json',
  ]

  static override flags = {
    'older-than': Flags.string({
      description: `Grace period: leave effects whose last record is younger than this (e.g. 90s, 5m, 1h; 0s: none). Default: [reconcile] older_than, else ${DEFAULTS.reconcileOlderThan}.`,
    }),
    concurrency: Flags.integer({
      min: 1,
      max: 64,
      description: `Effects worked on at once per target. Default: [reconcile] concurrency, else ${DEFAULTS.reconcileConcurrency}.`,
    }),
    limit: Flags.integer({ min: 1, description: 'Reconcile at most this many effects (oldest first); the rest wait for the next run.' }),
    'dry-run': Flags.boolean({ description: 'Show what would be done; change nothing, send nothing.' }),
    ...wideFlag,
    'later-within': Flags.string({
      description: 'Ask again about COMMITTED effects created this recently whose service had not finished them (a Stripe refund answered pending), and report those that failed since (e.g. 7d, 30d; 0 turns it off). Default 30d.',
    }),
  }

  async run(): Promise<ReconcileResult> {
    const config = await this.interlockConfig()
    requireFullAccess(config.store, 'reconcile-effects')
    const olderThanMs = this.olderThan(config.reconcile?.olderThanMs ?? DEFAULTS.reconcileOlderThanMs)
    // Store, targets (with the config's secrets) and policy from the front door, as every command;
    // and its [relay] key, so what it journals is signed as the relays sign theirs.
    const interlock = await this.openInterlock()
    const bar = this.jsonEnabled() ? undefined : progressBar(process.stderr, 'reconciling')
    let result: ReconcileResult
    try {
      result = await reconcileEffects({
        store: interlock.store,
        storeConfig: config.store,
        targets: interlock.targets.values(),
        policy: interlock.policy,
        operators: interlock.operators,
        signing: interlock.signing,
        retry: interlock.retry,
        olderThanMs,
        concurrency: this.flags.concurrency ?? config.reconcile?.concurrency ?? DEFAULTS.reconcileConcurrency,
        limit: this.flags.limit,
        dryRun: this.flags['dry-run'],
        laterWithinMs: this.duration('later-within', this.flags['later-within'], LATER_WITHIN_MS),
        onProgress: bar?.update,
      })
      // What waits for people is told ([[notify]]): notices journaled and sent through this run's gate.
      if (!this.flags['dry-run'] && config.notify.length > 0) {
        const notifier = new Notifier({ store: interlock.store, config: interlock.config, propose: (input) => interlock.gate.submit(input), log: (line) => this.logToStderr('%s', line) })
        result = { ...result, notified: await notifier.pass() }
      }
    } finally {
      bar?.done()
      await interlock.close()
    }
    if (!this.jsonEnabled()) this.summary(result)
    // Not an error: the run finished, and the code tells cron what it found.
    process.exitCode = result.exitCode
    return result
  }

  private olderThan(fallback: number): number {
    return this.duration('older-than', this.flags['older-than'], fallback)
  }

  private duration(flag: string, given: string | undefined, fallback: number): number {
    return given === undefined ? fallback : durationFlag(flag, given, { zero: true })
  }

  private summary(result: ReconcileResult): void {
    const report = result.report
    if (report) {
      if (report.effects.length > 0) {
        this.table(
          ['effect', 'target', 'tier', 'found', report.dryRun ? 'would' : 'action', 'now'],
          report.effects.map((e) => [
            e.effectId.slice(0, 12),
            e.target,
            e.tier,
            e.found,
            report.dryRun ? e.plan : e.action,
            e.error ? `error: ${e.error}` : e.action === 'refused' ? 'refused' : (e.outcome?.status ?? (report.dryRun && e.plan !== 'wait' ? '' : waitingNow(e))),
          ]),
        )
        this.log()
      }
      // Why each held effect waits: the operators can act on it.
      const refused = report.effects.filter((e) => e.action === 'refused')
      for (const e of refused) {
        this.log(`${e.effectId}: refused, nothing sent: its journal does not authorize it`)
        for (const r of e.refused ?? []) this.log(`  ${r}`)
      }
      if (refused.length > 0) this.log()
      const waitingHeld = report.effects.filter((e) => e.plan === 'wait' && e.quorum?.reasons)
      for (const e of waitingHeld) {
        this.log(`${e.effectId}: HELD, waiting for operators (${quorumText(e)})`)
        for (const r of e.quorum!.reasons!) this.log(`  ${r}`)
      }
      if (waitingHeld.length > 0) this.log()
      const s = report.skipped
      this.table(['in flight', 'reconciled', 'too recent', 'held by a relay', 'over the limit', 'AMBIGUOUS waiting', 'HELD waiting'], [
        [report.inFlight, report.effects.length, s.recent, s.filtered, s.deferred, result.waiting.ambiguous, result.waiting.held],
      ])
    }
    const later = result.later
    if (later && later.asked > 0) {
      for (const f of later.failed) this.log(`${f.effectId}: COMMITTED, and ${f.detail}`)
      for (const e of later.errors) this.log(`${e.effectId}: could not be asked again now: ${e.error}`)
      this.log(`later outcomes: ${later.asked} committed effect${later.asked === 1 ? '' : 's'} asked again, ${later.failed.length} failed since, ${later.pending} still pending, ${later.errors.length} not answered`)
    }
    this.log(`${result.status}: ${result.message}`)
  }
}

function quorumText(e: RecoveredEffect): string {
  const q = e.quorum!
  return `${q.have} of ${q.need ?? '?'} release${q.need === 1 ? '' : 's'}${q.rule === undefined ? '' : ` under rule "${q.rule}"`}`
}

function waitingNow(e: RecoveredEffect): string {
  return e.found === 'HELD' && e.quorum ? `held: ${quorumText(e)}` : e.found.toLowerCase()
}
