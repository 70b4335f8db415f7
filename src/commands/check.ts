import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { wideFlag } from '../cli/wide-flag.js'
import { CHECK_FAMILIES, DEFAULT_PROBE_TIMEOUT_MS, failedCheckExitCode, runChecks, type CheckFamily, type CheckReport } from '../core/check/index.js'
import { CheckFailedError } from '../core/errors.js'

export default class Check extends BaseCommand<typeof Check> {
  static override summary = 'Check interlock.toml, the store, every target, the keys, the policy and the notify rules, changing nothing; for CI against staging.'
  static override description = `Checks, in this order and concurrently where it can:
  config   interlock.toml against the schema: every problem listed, each with its key path
  store    reachable; schema installed and at this binary's version (PostgreSQL: else interlock install; a SQLite journal is created and upgraded by the first command that opens it)
  targets  credentials present and accepted; reachable through a read-only probe (Stripe balance, GitHub user and repository, S3 HeadBucket and a missing key answering 404, not 403 (s3:ListBucket), SendGrid scopes, Slack auth.test, PostgreSQL table, columns and unique effect id); the declared tier can be honoured; for an http target, per action, the request a sample call would send (from the config alone, nothing sent, secrets masked)
  keys     operator public keys parse; the relay key exists and is not readable by group or others
  policy   rules name only existing targets and actions; no quorum is larger than the operators
  notify   each [[notify]] rule: what it tells and where; a notice it makes is one its channel takes (the channel itself is probed as a target)

Every probe is read-only and runs under its own timeout (--timeout). Prints a table of pass / warn / fail with the fix for each failure; --json prints the same report for CI.

Exit codes: 0 when nothing failed (warnings allowed); 3 when a failure is a mistake in interlock.toml itself (missing, not matching the schema, an unset \${VAR} it needs, an MCP tool or a policy target or action that does not exist, a quorum larger than the operators, an operator key that does not parse); 1 when any other check failed; 2 on bad usage.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --config deploy/staging.toml --json',
    '<%= config.bin %> <%= command.id %> --only store --only targets --timeout 5000',
  ]
  static override flags = {
    only: Flags.string({
      description: 'Run only this family of checks (repeatable); the config is always checked.',
      options: [...CHECK_FAMILIES],
      multiple: true,
    }),
    timeout: Flags.integer({ description: 'Longest wait for one probe, in milliseconds.', default: DEFAULT_PROBE_TIMEOUT_MS, min: 100, max: 600_000 }),
    ...wideFlag,
  }

  async run(): Promise<CheckReport> {
    const report = await runChecks({
      path: this.flags.config,
      cwd: process.cwd(),
      env: process.env,
      only: this.flags.only as CheckFamily[] | undefined,
      // Values from ${VAR}s are scrubbed from everything printed, as in every command.
      onSecrets: (values) => values.forEach((v) => this.addSecret(v)),
      timeoutMs: this.flags.timeout,
    })
    if (this.jsonEnabled()) {
      if (!report.ok) this.logJson(this.toSuccessJson(report))
    } else {
      this.table(
        ['status', 'check', 'detail', 'fix'],
        report.checks.map((c) => [c.status.toUpperCase(), c.id, c.detail, c.fix ?? '']),
      )
      const { pass, warn, fail } = report.summary
      this.log(`\n${pass} passed, ${warn} warned, ${fail} failed${report.config ? ` (${report.config})` : ''}`)
    }
    if (!report.ok) throw new CheckFailedError(report.summary.fail, failedCheckExitCode(report))
    return report
  }
}
