import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { signingKeyFlags, trustedSigningKey } from '../../cli/signing-key.js'
import { systemClock } from '../../core/clock.js'
import { anchorJournals, type AnchorResult } from '../../core/outbox/anchor.js'
import { RulesPolicy } from '../../core/policy/rules.js'
import { openStore } from '../../core/stores/open.js'

export default class OutboxAnchor extends BaseCommand<typeof OutboxAnchor> {
  static override summary = "Sign every journal's head into a file kept outside the store, for `outbox verify --anchor`."
  static override description = `Verifies every journal as \`outbox verify\` does (hash chains, lifecycle, effect ids, policy, operator signatures, relay receipts and record signatures), then writes each journal's head (journal, last record, its hash), signed with your operator key or a relay key, to a new file. Keep it where the store's writers cannot change it. \`outbox verify --anchor <file>\` then fails a journal that no longer reaches its anchored head, or reaches a different record there: a journal cut back with its head and effects rows rewritten, which no chain or signature inside the store can show. Safe beside running relays: each journal is anchored where the reading found its end. Run it regularly (cron): it sees only what was cut back behind it.

Unsigned records a relay or gate wrote (by a version that signed only receipts, or a writer without the relay key; a forgery looks the same) refuse the anchor, naming them, unless --cover-unsigned: the anchor then vouches for them, once you have checked them, and verify --anchor with relay keys accepts them as long as their journal still reaches its anchored head. Every record after the heads must be signed.

The signing key must be trusted by verify: an operator key declared in [[operators]], or a relay key that is the [relay] key's or given with --relay-key.

Exit codes: 0 written; 1 the file exists or cannot be written; 2 bad usage or passphrase; 3 config invalid, or the key is not trusted; 4 store unreachable; 5 the journals do not verify (nothing written).`
  static override examples = [
    '<%= config.bin %> <%= command.id %> --out anchors/2026-01-31.json --key alice.operator.key',
    '<%= config.bin %> <%= command.id %> --out anchor.json --key alice.operator.key --cover-unsigned',
  ]
  static override flags = {
    out: Flags.string({ required: true, helpValue: '<file>', description: 'File to write (must not exist).' }),
    ...signingKeyFlags('with'),
    'cover-unsigned': Flags.boolean({ description: 'Anchor even though records a relay writes carry no signature after signed ones: the anchor vouches for them.' }),
  }

  async run(): Promise<AnchorResult> {
    const config = await this.interlockConfig()
    const { key, relays } = trustedSigningKey(config, this.flags, 'anchor')
    const store = await openStore(config.store)
    try {
      const { result } = await anchorJournals(store, this.flags.out, key, {
        operators: config.operators,
        relays,
        policy: new RulesPolicy(config.policy.rules),
        coverUnsigned: this.flags['cover-unsigned'],
        now: systemClock.now(),
      })
      this.log(`Anchored ${result.journals} journals (${result.records} records) in ${result.path}, signed by ${result.role} ${result.signer}.`)
      if (result.coveredUnsigned > 0) this.log(`It vouches for ${result.coveredUnsigned} records that carry no relay signature.`)
      return result
    } finally {
      await store.close()
    }
  }
}
