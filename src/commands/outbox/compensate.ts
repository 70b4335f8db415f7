import { Args } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { resolveEffectId } from '../../core/outbox/effect-ref.js'
import { ExitCode } from '../../core/errors.js'
import { compensateEffect, type CompensateResult } from '../../core/outbox/compensate.js'

export default class OutboxCompensate extends BaseCommand<typeof OutboxCompensate> {
  static override summary = "Submit a committed effect's compensating effect, through the same gate and policy."
  static override description = `Asks the effect's target for the effect that undoes it (a refund's reversal, a revert commit, chat.delete...) and submits it as a new effect linked to the original (key "compensates:<id>"), through the gate and the policy: it may be HELD for operators like any other. Asking twice submits the same effect and reports where it stands. A target whose effects cannot be undone says so.

Exit codes: 0 compensation committed or held; 1 it failed or was rejected; 2 not an effect id, or an ambiguous prefix; 6 the effect is not COMMITTED, or its target cannot compensate; 7 no such effect or target; 10 the compensation is AMBIGUOUS.`
  static override examples = ['<%= config.bin %> <%= command.id %> 3f9a…c2', '<%= config.bin %> <%= command.id %> 3f9a…c2 --json']
  static override args = { id: Args.string({ required: true, description: 'Id of the COMMITTED effect to undo (or a unique prefix of at least 4 hex characters).' }) }

  async run(): Promise<CompensateResult> {
    const interlock = await this.openInterlock()
    try {
      const r = await compensateEffect(interlock.gate, interlock.store, await resolveEffectId(interlock.store, this.args.id))
      this.log(`Compensation ${r.effectId} (${r.compensation.action} on ${r.compensation.target}): ${r.outcome.status}.`)
      if (r.outcome.status === 'ambiguous') process.exitCode = ExitCode.AMBIGUOUS
      else if (r.outcome.status === 'failed' || r.outcome.status === 'rejected') process.exitCode = ExitCode.FAILURE
      return r
    } finally {
      await interlock.close()
    }
  }
}
