import { Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { IntegrityError } from '../../core/errors.js'
import { readAnchor } from '../../core/outbox/anchor-file.js'
import { trustedRelayKeys, type RelayKey } from '../../core/outbox/relay-keys.js'
import type { VerifyReport } from '../../core/outbox/verify.js'
import { verifyExport, verifyStore } from '../../core/outbox/verify-sources.js'
import { RulesPolicy } from '../../core/policy/rules.js'
import { openStore } from '../../core/stores/open.js'

export default class OutboxVerify extends BaseCommand<typeof OutboxVerify> {
  static override needsAllTargets = false
  static override allowDefaultConfig = true
  static override summary = 'Check every journal: hash chains, lifecycle, effect ids, policy, and every signature.'
  static override description = `Recomputes every journal's hash chain, follows every effect through the lifecycle, recomputes every effect's id from the thread, target, action, args and key its proposal journaled, flags an effect authorized straight from PROPOSED that a rule of the policy in force holds (or held under another rule than the one that holds it), checks every operator release, denial and resolution against the keys in [[operators]] (and that every authorization from HELD carried its rule's quorum of releases, unexpired when the last of them was journaled), every relay receipt, and the signature of every record a relay or gate wrote. Names the first bad record and lists every problem; a record that cannot be read back (its data no longer parses) is one, named by journal and record. Works offline, on the store or on a file made by \`interlock outbox export\`.

Trusted relay keys: the public key in the [relay] key file of interlock.toml (named by [relay] id, else by the key's name; only its public half is read, no passphrase needed), and each --relay-key. When there are any, every record past PROPOSED must be in a seal that verifies with one of them (each writer seals every commit: one signature over the hashes of the records it wrote; journals written before seals carry a signature per record, which is checked instead), or carry an operator's signed release, denial or resolution, or be the policy's decision (PROPOSED → AUTHORIZED or HELD), which the policy in force judges again: an unsigned record, or one signed by another key or altered, fails verification naming its record. Unsigned records (written by a version that signed only receipts, or by a writer without the relay key) are accepted only under an anchor that covers them (\`interlock outbox anchor --cover-unsigned\`): a journal whose signatures were all stripped looks the same. With --anchor, the records up to each anchored head are covered by its signature, and every record after them must be signed. When there are none, relay signatures are not checked: they are counted as unchecked and said so, and verification can still pass.

--anchor <file> (made by \`interlock outbox anchor\`): every journal it names must still reach its anchored head, with the same record there; a journal cut back behind it fails. With no config file, it reads the embedded default (the SQLite journal ./interlock.db).

Exit codes: 0 everything verifies; 5 a problem was found, or the anchor is not signed by a trusted key; 2 a --relay-key is malformed; 3 config invalid, or the [relay] key file cannot be read or is not a relay key; 4 store unreachable; 7 the file or anchor does not exist.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --file journal-2026-01.jsonl --json',
    '<%= config.bin %> <%= command.id %> --relay-key relay-1=ed25519:Qm…',
    '<%= config.bin %> <%= command.id %> --anchor anchors/2026-01-31.json',
  ]
  static override flags = {
    file: Flags.string({ helpValue: '<export.jsonl>', description: 'Verify an exported journal instead of the store.' }),
    'relay-key': Flags.string({
      multiple: true,
      helpValue: '<name>=<public key>',
      description: "A relay's public key to trust for its signatures (repeatable), besides the [relay] key file's. Without any, they are counted as unchecked.",
    }),
    anchor: Flags.string({ helpValue: '<anchor.json>', description: 'A signed anchor from `interlock outbox anchor`: every journal must still reach its head there.' }),
  }

  async run(): Promise<VerifyReport & { relayKeys: RelayKey[] }> {
    const config = await this.interlockConfig()
    const relayKeys = trustedRelayKeys(config.relay, this.flags['relay-key'] ?? [])
    const anchor = this.flags.anchor ? readAnchor(this.flags.anchor, { operators: new Map(config.operators.map((o) => [o.name, o.publicKey])), relays: relayKeys }) : undefined
    const opts = { operators: config.operators, relays: relayKeys, policy: new RulesPolicy(config.policy.rules), anchor }
    let report: VerifyReport
    if (this.flags.file) report = await verifyExport(this.flags.file, opts)
    else {
      this.sayEmbeddedDefault(config)
      const store = await openStore(config.store)
      try {
        report = await verifyStore(store, opts)
      } finally {
        await store.close()
      }
    }
    const { signatures: s, receipts: r, writers: w, seals: seal } = report
    this.log(`${report.records} records in ${report.journals} journals, ${report.effects} effects; ${s.valid} operator signatures valid, ${s.invalid} invalid; ${r.valid} relay receipts valid, ${r.invalid} invalid, ${r.unchecked} unchecked.`)
    this.log(
      `Records written by relays and gates: ${w.valid} signed and valid (${w.sealed} under seals), ${w.invalid} invalid, ${w.unsigned} unsigned, ${w.unchecked} unchecked` +
        `${w.byAnchor > 0 ? `, ${w.byAnchor} covered by the anchor` : ''}; seals: ${seal.valid} valid, ${seal.invalid} invalid, ${seal.unchecked} unchecked.`,
    )
    this.log(
      relayKeys.length === 0
        ? 'Relay signatures not checked: no relay key is configured ([relay] key in interlock.toml) or given (--relay-key).'
        : `Relay signatures checked against ${relayKeys.map((k) => `${k.name} (${k.from === '--relay-key' ? k.from : `[relay] key ${k.from}`})`).join(', ')}.`,
    )
    if (anchor) this.log(`Anchor ${anchor.path}: ${anchor.heads.size} journal heads, signed by ${anchor.role} ${anchor.signer} at ${anchor.at}.`)
    if (report.ok) {
      const unchecked = r.unchecked + w.unchecked + seal.unchecked > 0
      this.log(unchecked ? 'OK: every chain, transition, effect id and operator signature verifies; relay signatures were not checked.' : 'OK: every chain, transition, effect id and signature verifies.')
      return { ...report, relayKeys }
    }
    if (!this.jsonEnabled()) for (const p of report.problems) this.logToStderr(`  ${p.message}`)
    throw new IntegrityError(`verification failed: ${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}; the first: ${report.firstBad!.message}`, {
      hint: 'Restore the journal from a backup, and find out who could write to it.',
      context: { report: { ...report, relayKeys } },
    })
  }
}
