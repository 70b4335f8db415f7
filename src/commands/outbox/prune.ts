import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { durationFlag } from '../../cli/duration.js'
import { signingKeyFlags, trustedSigningKey } from '../../cli/signing-key.js'
import { systemClock } from '../../core/clock.js'
import { UsageError } from '../../core/errors.js'
import { readAnchor } from '../../core/outbox/anchor-file.js'
import { pruneJournals, type PruneOutcome } from '../../core/outbox/prune.js'
import { RulesPolicy } from '../../core/policy/rules.js'
import { openStore } from '../../core/stores/open.js'

export default class OutboxPrune extends BaseCommand<typeof OutboxPrune> {
  static override summary = 'Archive settled history and delete it from the store, under a signed checkpoint `outbox verify` accepts.'
  static override description = `Verifies every journal as \`outbox verify\` does, then takes out of the store the effects settled (COMMITTED, REJECTED, FAILED) more than --older-than ago, whole, from the start of each journal: an effect still open (HELD, AMBIGUOUS, in flight), or settled since, stops its journal's cut there, and so does every effect after it.

What goes is first written to --archive (a file of \`outbox export\`'s format, which \`outbox verify --file\` checks on its own), made durable, then pinned by a checkpoint signed with --key (an operator key declared in [[operators]], or the relay key): each cut journal's last removed record and the archive's digest. The checkpoint is stored in the store and written beside the archive (<archive>.checkpoint.json). \`outbox verify\`, \`outbox anchor\` and \`outbox export\` then read each pruned journal from its checkpoint on; recovery and histories link the first record left to it.

Keep the archives: they are the record of what was done. An effect pruned is forgotten by the store, so the same effect submitted again (same thread, target, action, args and key) would be a new proposal: keep settled effects at least as long as any agent may retry a step, and longer than \`reconcile-effects --later-within\` (30 days by default), which looks at recent COMMITTED effects again.

--dry-run verifies and says what would go; it writes and deletes nothing.

Exit codes: 0 pruned, or nothing to prune; 1 the archive or checkpoint file exists or cannot be written; 2 bad usage or passphrase; 3 config invalid, or the key is not trusted; 4 store unreachable, or the role may not delete (run it as the installer, or a role given --pruner); 5 the journals do not verify, or changed while pruning (nothing deleted).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --older-than 90d --archive /var/lib/interlock/archive/2026-06-30.jsonl --key /etc/interlock/relay.key',
    '<%= config.bin %> <%= command.id %> --older-than 90d --dry-run --key alice.operator.key',
  ]
  static override flags = {
    'older-than': Flags.string({ required: true, helpValue: '<duration>', description: 'Prune effects settled at least this long ago (e.g. 90d, 2160h; 0s: every settled effect).' }),
    archive: Flags.string({ helpValue: '<file>', description: 'File to write the removed records to (must not exist). Required unless --dry-run.' }),
    ...signingKeyFlags('the checkpoint with'),
    anchor: Flags.string({ helpValue: '<anchor.json>', description: 'A signed anchor from `interlock outbox anchor`, checked as `outbox verify --anchor` does.' }),
    'dry-run': Flags.boolean({ description: 'Verify and say what would be pruned; write and delete nothing.' }),
  }

  async run(): Promise<PruneOutcome> {
    const config = await this.interlockConfig()
    const f = this.flags
    const olderThanMs = durationFlag('older-than', f['older-than'], { zero: true })
    if (!f.archive && !f['dry-run']) throw new UsageError('no --archive to write the pruned records to', { hint: 'Pass --archive <file> (a new file), or --dry-run to see what would go.' })
    const { key, relays } = trustedSigningKey(config, f, 'checkpoint')
    const anchor = f.anchor ? readAnchor(f.anchor, { operators: new Map(config.operators.map((o) => [o.name, o.publicKey])), relays }) : undefined
    const store = await openStore(config.store)
    let outcome: PruneOutcome
    try {
      ;({ outcome } = await pruneJournals(store, {
        operators: config.operators,
        relays,
        policy: new RulesPolicy(config.policy.rules),
        anchor,
        olderThanMs,
        now: systemClock.now(),
        archive: f.archive ?? '',
        key,
        dryRun: f['dry-run'],
      }))
    } finally {
      await store.close()
    }
    const what = `${outcome.effects} effect${outcome.effects === 1 ? '' : 's'} (${outcome.records} records) of ${outcome.journals} journal${outcome.journals === 1 ? '' : 's'}, settled before ${outcome.cutoff}`
    if (outcome.dryRun) this.log(outcome.effects ? `Would prune ${what}. Dry run: nothing was written or deleted.` : `Nothing settled before ${outcome.cutoff} to prune.`)
    else if (!outcome.checkpoint) this.log(`Nothing settled before ${outcome.cutoff} to prune.`)
    else {
      this.log(`Pruned ${what}.`)
      this.log(`Archive: ${outcome.archive!.path} (sha256 ${outcome.archive!.sha256}).`)
      this.log(`Checkpoint: ${outcome.checkpoint.path}, signed by ${outcome.checkpoint.role} ${outcome.checkpoint.signer}; stored in the store for \`outbox verify\`.`)
    }
    return outcome
  }
}
