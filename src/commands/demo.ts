import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { runDemo, type DemoReport } from '../core/demo/run.js'
import { InterlockError, ExitCode } from '../core/errors.js'

export default class Demo extends BaseCommand<typeof Demo> {
  static override summary = 'Run the whole promise end to end on the embedded SQLite default: a crash in flight, recovery, and the proof.'
  static override description = `Needs no config and no set-up. Makes a temporary SQLite journal, a real git repository (a tier-2 target) and a local HTTP service with an endpoint that honours Idempotency-Key (tier 1) and one that does not (tier 3). A scripted agent reads the repository, a teammate edits one function it read, and the agent's worker process submits four effects. The worker is killed with SIGKILL after its effects were applied and before any was recorded COMMITTED; recover() then runs.

The table sets each effect's journal beside what the target itself recorded (the service's own counts per effect id, the repository's commits carrying the effect id): tier 1 applied once after a re-apply with the same key, tier 2 applied once and found by query, tier 3 AMBIGUOUS, and the stale decision REJECTED without being applied.

Exit 0 when every row holds, 1 otherwise.`
  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --keep', '<%= config.bin %> <%= command.id %> --json']
  static override allowDefaultConfig = true
  static override flags = {
    keep: Flags.boolean({ description: 'Keep the temporary folder (journal, repository) and print its path.' }),
  }

  async run(): Promise<DemoReport> {
    const json = this.jsonEnabled()
    const report = await runDemo({ keep: this.flags.keep, log: json ? undefined : (l) => this.log(l) })
    if (!json) {
      this.log()
      this.table(
        ['effect', 'target', 'tier', 'journal', 'recovery', 'applied (target’s count)', 'expected', ''],
        report.rows.map((r) => [
          r.label,
          r.target,
          r.tier,
          r.journal.join(' → '),
          r.recovery,
          r.requests === undefined ? String(r.applied) : `${r.applied} (${r.requests} requests)`,
          r.expected,
          r.ok ? 'ok' : 'WRONG',
        ]),
      )
      if (report.kept) this.log(`\nKept ${report.dir}`)
      this.log(report.ok ? '\nEvery effect changed the world at most once; the one nobody can know about is AMBIGUOUS.' : '')
    }
    if (!report.ok) {
      throw new InterlockError('E_DEMO', ExitCode.FAILURE, 'the demo did not hold: see the rows marked WRONG', { context: { rows: report.rows } })
    }
    return report
  }
}
