import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { signingKeyFlags, trustedSigningKey } from '../../cli/signing-key.js'
import { systemClock } from '../../core/clock.js'
import { checkpointJournals, type CheckpointOutcome } from '../../core/outbox/checkpoint.js'
import { RulesPolicy } from '../../core/policy/rules.js'
import { openStore } from '../../core/stores/open.js'

export default class OutboxCheckpoint extends BaseCommand<typeof OutboxCheckpoint> {
  static override summary = "Verify each journal's new records once, and pin its settled history under a signed checkpoint `outbox verify` checks."
  static override description = `Reads each journal from its last checkpoint on (from its start the first time), verifies what it reads as \`outbox verify\` does, then pins each journal's settled history: its longest run of records, from there, of effects settled (COMMITTED, REJECTED, FAILED) whole within it. The pin (journal, last record, its hash) is signed with --key (an operator key declared in [[operators]], or the relay key) into a checkpoint stored in the store; nothing is removed.

Settled history is so verified once: the next checkpoint starts after the pin, and recovery (\`gate.recover()\`, \`reconcile-effects\`) reads only the records of effects in flight. \`outbox verify\` still reads everything, and fails a journal that no longer holds the pinned record with that hash (a record rewritten before it, the chain recomputed over it) or that ends before it. Run it regularly (cron), like \`outbox anchor\`: what it costs is the records written since the last one, and those of effects still open then.

A checkpoint removed from the store pins nothing, and the store cannot tell: --out writes it to a file too, to keep where the store's writers cannot reach (or take an \`outbox anchor\`).

--dry-run verifies and says what would be pinned; it writes nothing.

Exit codes: 0 pinned, or nothing new to pin; 1 the --out file exists or cannot be written; 2 bad usage or passphrase; 3 config invalid, or the key is not trusted; 4 store unreachable, or the role may not store a checkpoint; 5 the journals do not verify (nothing written).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --key /etc/interlock/relay.key',
    '<%= config.bin %> <%= command.id %> --key alice.operator.key --out /var/lib/interlock/checkpoints/2026-06-30.json',
  ]
  static override flags = {
    ...signingKeyFlags('the checkpoint with'),
    out: Flags.string({ helpValue: '<file>', description: 'Also write the checkpoint to this file (must not exist), to keep outside the store.' }),
    'dry-run': Flags.boolean({ description: 'Verify and say what would be pinned; write nothing.' }),
  }

  async run(): Promise<CheckpointOutcome> {
    const config = await this.interlockConfig()
    const f = this.flags
    const { key, relays } = trustedSigningKey(config, f, 'checkpoint')
    const store = await openStore(config.store)
    let outcome: CheckpointOutcome
    try {
      ;({ outcome } = await checkpointJournals(store, {
        operators: config.operators,
        relays,
        policy: new RulesPolicy(config.policy.rules),
        key,
        now: systemClock.now(),
        out: f.out,
        dryRun: f['dry-run'],
      }))
    } finally {
      await store.close()
    }
    const read = `${outcome.read.records} record${outcome.read.records === 1 ? '' : 's'} of ${outcome.read.journals} journal${outcome.read.journals === 1 ? '' : 's'} read and verified`
    const what = `${outcome.records} record${outcome.records === 1 ? '' : 's'} (${outcome.effects} settled effect${outcome.effects === 1 ? '' : 's'}) of ${outcome.journals} journal${outcome.journals === 1 ? '' : 's'}`
    if (outcome.journals === 0) this.log(`Nothing new to pin (${read}).`)
    else if (outcome.dryRun) this.log(`Would pin ${what} (${read}). Dry run: nothing was written.`)
    else {
      const c = outcome.checkpoint!
      this.log(`Pinned ${what} (${read}).`)
      this.log(`Checkpoint ${c.digest.slice(0, 12)}…, signed by ${c.role} ${c.signer}; stored in the store for \`outbox verify\`${c.path ? ` and written to ${c.path}` : ''}.`)
    }
    return outcome
  }
}
