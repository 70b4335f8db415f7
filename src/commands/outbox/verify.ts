import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { parsePublicKey } from '../../core/crypto/keys.js'
import { IntegrityError, UsageError } from '../../core/errors.js'
import type { VerifyReport } from '../../core/outbox/verify.js'
import { verifyExport, verifyStore } from '../../core/outbox/verify-sources.js'
import { RulesPolicy } from '../../core/policy/rules.js'
import { openStore } from '../../core/stores/open.js'

export default class OutboxVerify extends BaseCommand<typeof OutboxVerify> {
  static override summary = 'Check every journal: hash chains, lifecycle, operator signatures and relay receipts.'
  static override description = `Recomputes every journal's hash chain, follows every effect through the lifecycle, checks every operator release, denial and resolution against the keys in [[operators]] (and that every release from HELD had its rule's quorum), and every relay receipt against the --relay-key given. Names the first bad record and lists every problem. Works offline, on the store or on a file made by \`interlock outbox export\`.

Exit codes: 0 everything verifies; 5 a problem was found; 3 config invalid; 4 store unreachable; 7 the file does not exist.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --file journal-2026-01.jsonl --json',
    '<%= config.bin %> <%= command.id %> --relay-key relay-1=ed25519:Qm…',
  ]
  static override flags = {
    file: Flags.string({ helpValue: '<export.jsonl>', description: 'Verify an exported journal instead of the store.' }),
    'relay-key': Flags.string({ multiple: true, helpValue: '<name>=<public key>', description: 'A relay\'s public key, to check its receipts (repeatable). Without one, receipts are counted as unchecked.' }),
  }

  async run(): Promise<VerifyReport> {
    const config = await this.interlockConfig()
    const relays = (this.flags['relay-key'] ?? []).map((text) => {
      const [name, publicKey] = [text.slice(0, text.indexOf('=')), text.slice(text.indexOf('=') + 1)]
      if (!name || !parsePublicKey(publicKey)) throw new UsageError(`--relay-key ${text} is not <name>=ed25519:<base64url>`)
      return { name, publicKey }
    })
    const opts = { operators: config.operators, relays, policy: new RulesPolicy(config.policy.rules) }
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
    if (report.ok) {
      this.log('OK: every chain, transition and signature verifies.')
      return report
    }
    if (!this.jsonEnabled()) for (const p of report.problems) this.logToStderr(`  ${p.message}`)
    throw new IntegrityError(`verification failed: ${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}; the first: ${report.firstBad!.message}`, {
      hint: 'Restore the journal from a backup, and find out who could write to it.',
      context: { report },
    })
  }
}
