import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { IntegrityError } from '../../core/errors.js'
import { trustedRelayKeys, type RelayKey } from '../../core/outbox/relay-keys.js'
import type { VerifyReport } from '../../core/outbox/verify.js'
import { verifyExport, verifyStore } from '../../core/outbox/verify-sources.js'
import { RulesPolicy } from '../../core/policy/rules.js'
import { openStore } from '../../core/stores/open.js'

export default class OutboxVerify extends BaseCommand<typeof OutboxVerify> {
  static override summary = 'Check every journal: hash chains, lifecycle, operator signatures and relay receipts.'
  static override description = `Recomputes every journal's hash chain, follows every effect through the lifecycle, checks every operator release, denial and resolution against the keys in [[operators]] (and that every authorization from HELD carried its rule's quorum of releases, unexpired when the last of them was journaled), and every relay receipt against the trusted relay keys. Names the first bad record and lists every problem. Works offline, on the store or on a file made by \`interlock outbox export\`.

Trusted relay keys: the public key in the [relay] key file of interlock.toml (named by [relay] id, else by the key's name; only its public half is read, no passphrase needed), and each --relay-key. When there are any, a receipt signed by another key, or altered, fails verification naming its record. When there are none, receipts are not checked: they are counted as unchecked and said so, and verification can still pass.

Exit codes: 0 everything verifies; 5 a problem was found; 2 a --relay-key is malformed; 3 config invalid, or the [relay] key file cannot be read or is not a relay key; 4 store unreachable; 7 the file does not exist.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --file journal-2026-01.jsonl --json',
    '<%= config.bin %> <%= command.id %> --relay-key relay-1=ed25519:Qm…',
  ]
  static override flags = {
    file: Flags.string({ helpValue: '<export.jsonl>', description: 'Verify an exported journal instead of the store.' }),
    'relay-key': Flags.string({
      multiple: true,
      helpValue: '<name>=<public key>',
      description: "A relay's public key to trust for its receipts (repeatable), besides the [relay] key file's. Without any, receipts are counted as unchecked.",
    }),
  }

  async run(): Promise<VerifyReport & { relayKeys: RelayKey[] }> {
    const config = await this.interlockConfig()
    const relayKeys = trustedRelayKeys(config.relay, this.flags['relay-key'] ?? [])
    const opts = { operators: config.operators, relays: relayKeys, policy: new RulesPolicy(config.policy.rules) }
    let report: VerifyReport
    if (this.flags.file) report = await verifyExport(this.flags.file, opts)
    else {
      const store = await openStore(config.store)
      try {
        report = await verifyStore(store, opts)
      } finally {
        await store.close()
      }
    }
    const { signatures: s, receipts: r } = report
    this.log(`${report.records} records in ${report.journals} journals, ${report.effects} effects; ${s.valid} operator signatures valid, ${s.invalid} invalid; ${r.valid} relay receipts valid, ${r.invalid} invalid, ${r.unchecked} unchecked.`)
    this.log(
      relayKeys.length === 0
        ? 'Relay receipts not checked: no relay key is configured ([relay] key in interlock.toml) or given (--relay-key).'
        : `Relay receipts checked against ${relayKeys.map((k) => `${k.name} (${k.from === '--relay-key' ? k.from : `[relay] key ${k.from}`})`).join(', ')}.`,
    )
    if (report.ok) {
      this.log(r.unchecked > 0 ? 'OK: every chain, transition and operator signature verifies; relay receipts were not checked.' : 'OK: every chain, transition and signature verifies.')
      return { ...report, relayKeys }
    }
    if (!this.jsonEnabled()) for (const p of report.problems) this.logToStderr(`  ${p.message}`)
    throw new IntegrityError(`verification failed: ${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}; the first: ${report.firstBad!.message}`, {
      hint: 'Restore the journal from a backup, and find out who could write to it.',
      context: { report: { ...report, relayKeys } },
    })
  }
}
