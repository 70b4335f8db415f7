import { BaseCommand } from '../../cli/base-command.js'
import { IntegrityError } from '../../core/errors.js'
import { notarySection, openNotaryStore } from '../../core/notary/open.js'
import { verifyNotaryStore, type NotaryVerifyReport } from '../../core/notary/verify.js'

export type NotaryVerifyResult = NotaryVerifyReport & { path: string }

export default class NotaryVerify extends BaseCommand<typeof NotaryVerify> {
  static override needsAllTargets = false
  static override summary = "Check the notary's log: every effect's hash chain, every record's signature against the trusted keys, and the protocol."
  static override description = `Reads the log [notary] names (the SQLite file at path, or the PostgreSQL schema at url), offline: the notary need not run. For every effect: records numbered without a gap (a gap is a deleted record), each following the hash of the one before it, each hash matching its content (an edited record shows here); each record's writer trusted for its kind ([notary.agents] for intend and abort, [notary.services] for claim, performed and failed) and its signature verifying against that key (a forged record shows here); and the protocol replayed record by record (docs/notary.md): intend first in its attempt, claim and abort excluding each other (never performed and aborted for one attempt), performed or failed only after the same service's claim, attempt n + 1 only after attempt n was aborted, each decision row naming its claim or abort. Reports the records per kind, the attempts the agent intended that no service claimed, still INTENDED or since ABORTED (not problems: a service that performs without claiming is not notarized, and this is where it would show), and every problem, naming its effect and record.

Exit codes: 0 everything verifies; 5 a problem was found; 3 no [notary] section or an invalid one; 4 the PostgreSQL log is unreachable or has no notary tables; 7 the SQLite log file does not exist.`
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json']

  async run(): Promise<NotaryVerifyResult> {
    const config = notarySection(await this.interlockConfig())
    const { store, path } = await openNotaryStore(config, { existing: true })
    let report: NotaryVerifyReport
    try {
      report = await verifyNotaryStore(store, { agents: config.agents, services: config.services })
    } finally {
      await store.close()
    }
    const k = report.kinds
    this.log(`${report.records} records for ${report.effects} effects in ${path}: ${k.intend} intend, ${k.claim} claim, ${k.performed} performed, ${k.failed} failed, ${k.abort} abort.`)
    this.log(`Signatures: ${report.signatures.valid} valid, ${report.signatures.invalid} invalid (agents: ${names(config.agents)}; services: ${names(config.services)}).`)
    if (report.unclaimed.length > 0) {
      this.log(`${report.unclaimed.length} attempt${report.unclaimed.length === 1 ? '' : 's'} intended and never claimed by a service: ${report.unclaimed.map((u) => `${u.effect} #${u.attempt} (${u.state})`).join(', ')}.`)
    }
    const result = { ...report, path }
    if (report.ok) {
      this.log('OK: every chain, signature and protocol rule verifies.')
      return result
    }
    if (!this.jsonEnabled()) for (const p of report.problems) this.logToStderr(`  ${p.message}`)
    throw new IntegrityError(`notary verification failed: ${report.problems.length} problem${report.problems.length === 1 ? '' : 's'}; the first: ${report.firstBad!.message}`, {
      hint: "Restore the notary's log from a backup, and find out who could write to its database.",
      context: { report: result },
    })
  }
}

function names(keys: Record<string, string>): string {
  const all = Object.keys(keys)
  return all.length === 0 ? 'none' : all.join(', ')
}
