import { Args } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { wideFlag } from '../../cli/wide-flag.js'
import { resolveEffectId } from '../../core/outbox/effect-ref.js'
import { effectLines } from '../../cli/effect-view.js'
import { effectDetails, type EffectDetails } from '../../core/outbox/show.js'

export default class OutboxShow extends BaseCommand<typeof OutboxShow> {
  static override needsAllTargets = false
  static override allowDefaultConfig = true
  static override summary = 'Show one effect and its whole history.'
  static override description = `The effect (target, action, thread, the principal that asked and its trace context when it says, args, premises, amount, the rule that held it, its digest), every signed statement about it, and every journal record, oldest first, each checked against its hash on the way. With no config file, it reads the embedded default (the SQLite journal ./interlock.db).

Exit codes: 0 shown; 2 not an effect id (64 hex characters, or a unique prefix of at least 4), or a prefix several effects share; 5 its records fail their hash check; 7 no such effect.`
  static override examples = ['<%= config.bin %> <%= command.id %> 3f9a…c2', '<%= config.bin %> <%= command.id %> 3f9a…c2 --json']
  static override flags = { ...wideFlag }
  static override args = { id: Args.string({ required: true, description: 'Effect id (64 hex characters), or a unique prefix of at least 4.' }) }

  async run(): Promise<EffectDetails> {
    const interlock = await this.openInterlock()
    const store = interlock.store
    let d: EffectDetails
    try {
      d = await effectDetails(store, await resolveEffectId(store, this.args.id))
    } finally {
      await interlock.close()
    }
    for (const line of effectLines(d)) this.log(line)
    this.log()
    this.table(['seq', 'state', 'at', 'data'], d.history.map((r) => [r.seq, r.state, r.at, summary(r.data)]))
    return d
  }
}

// Signatures are long and shown above; the table keeps the rest readable.
function summary(data: Record<string, unknown>): string {
  const shown = Object.fromEntries(Object.entries(data).filter(([k]) => !['effect', 'release', 'releases', 'denial', 'resolution', 'recordSignature'].includes(k)))
  const text = JSON.stringify(shown)
  return text.length > 120 ? `${text.slice(0, 117)}...` : text
}
