import { Flags } from '@oclif/core'
import { BaseCommand } from '../cli/base-command.js'
import { demoLines } from '../cli/demo-view.js'
import { runDemo, SCENARIOS, type DemoReport, type ScenarioName } from '../core/demo/run.js'
import { ExitCode, InterlockError } from '../core/errors.js'

export default class Demo extends BaseCommand<typeof Demo> {
  static override summary = 'Run the whole promise end to end on the embedded SQLite default: a crash in flight, recovery, and the proof.'
  static override description = `Needs no config and no set-up. Each scenario journals to a temporary SQLite file, runs a scripted agent in a worker process, kills the worker with SIGKILL after its effects were applied and before any was recorded COMMITTED, runs recover(), and sets each effect's journal beside what the target itself recorded.

local    a real git repository (tier 2) and a local HTTP service with an endpoint that honours Idempotency-Key (tier 1) and one that does not (tier 3). A teammate edits one function the agent read: that decision is REJECTED, while an edit elsewhere in the same file leaves another decision standing (symbol premises).
refunds  a refund agent on the Stripe (tier 1), GitHub (tier 2) and Slack (tier 3) targets, against local emulators of those APIs: Stripe drops the answer to a refund it applied, a charge is disputed after the agent decided to refund it, and the emulators' own ledgers show that no refund was paid twice.
notary   one tier-3 HTTP service reached two ways: directly, and behind a local notary (the service writes claim and performed through the notary's middleware, the agent's target is notarized). The same crash leaves the direct effect AMBIGUOUS; the notarized one is found at the notary and COMMITTED.

Expected: tier 1 applied once after recovery with the same key, tier 2 applied once and found by query, tier 3 AMBIGUOUS (applied at most once), tier 3 behind the notary COMMITTED and applied once, stale decisions REJECTED and never applied. Exit 0 when every row holds, 1 otherwise.`
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --scenario refunds',
    '<%= config.bin %> <%= command.id %> --keep --json',
  ]
  static override allowDefaultConfig = true
  static override flags = {
    scenario: Flags.string({
      description: 'Run only this scenario (repeatable). Default: all, in order.',
      options: Object.keys(SCENARIOS),
      multiple: true,
    }),
    keep: Flags.boolean({ description: 'Keep the temporary folder (journals, repository) and print its path.' }),
  }

  async run(): Promise<DemoReport> {
    const json = this.jsonEnabled()
    const report = await runDemo({
      scenarios: this.flags.scenario as ScenarioName[] | undefined,
      keep: this.flags.keep,
      log: json ? undefined : (l) => this.log(l),
    })
    if (!json) {
      const tty = Boolean(process.stdout.isTTY)
      for (const line of demoLines(report, { tty, color: tty && !process.env.NO_COLOR })) this.log(line)
    }
    if (!report.ok) {
      throw new InterlockError('E_DEMO', ExitCode.FAILURE, 'the demo did not hold: see the rows marked WRONG', {
        context: { scenarios: report.scenarios.filter((s) => !s.ok) },
      })
    }
    return report
  }
}
