import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { resolveEffectId } from '../../core/outbox/effect-ref.js'
import { effectLines } from '../../cli/effect-view.js'
import { confirm, keyFlags, operatorKey } from '../../cli/operator-key.js'
import { systemClock } from '../../core/clock.js'
import { ExitCode, InterlockError, UsageError } from '../../core/errors.js'
import { redispatch } from '../../core/outbox/redispatch.js'
import { resolveEffect, type Resolution, type ResolveResult } from '../../core/outbox/resolve.js'
import { effectDetails } from '../../core/outbox/show.js'
import type { SubmitOutcome } from '../../core/outcome.js'

export default class OutboxResolve extends BaseCommand<typeof OutboxResolve> {
  static override summary = 'Sign what happened to an AMBIGUOUS effect.'
  static override description = `An AMBIGUOUS effect reached a target that cannot say whether it happened: a tier-3 target, or one that answered it cannot know (its reason says what to look at: a 500 Stripe keeps for the idempotency key, an S3 object another writer replaced). Check the service yourself, then sign: --applied (it happened → COMMITTED) or --not-applied (it did not → FAILED). Only --redispatch sends it again (→ DISPATCHED, then sent by this command at once); nothing is ever re-sent unless you ask. A redispatched Stripe refund is looked up first and, when not found, goes back to AUTHORIZED to be checked against the charge again and sent by the relay or reconcile-effects (its idempotency key may be older than Stripe keeps keys). Asks for confirmation on a terminal (--yes otherwise).

Exit codes: 0 resolved; 1 you answered no, or the redispatch failed; 2 bad usage; 3 key file refused or key not trusted; 6 the effect is not AMBIGUOUS; 7 no such effect; 10 the redispatch is AMBIGUOUS again.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> 3f9a…c2 --applied',
    '<%= config.bin %> <%= command.id %> 3f9a…c2 --not-applied --yes --json',
    '<%= config.bin %> <%= command.id %> 3f9a…c2 --redispatch --key alice.operator.key',
  ]
  static override args = { id: Args.string({ required: true, description: 'Effect id (64 hex characters), or a unique prefix of at least 4.' }) }
  static override flags = {
    ...keyFlags,
    applied: Flags.boolean({ description: 'It happened: → COMMITTED.', exclusive: ['not-applied', 'redispatch'] }),
    'not-applied': Flags.boolean({ description: 'It did not happen: → FAILED.', exclusive: ['applied', 'redispatch'] }),
    redispatch: Flags.boolean({ description: 'It did not happen; send it again now: → DISPATCHED.', exclusive: ['applied', 'not-applied'] }),
    yes: Flags.boolean({ char: 'y', description: 'Sign without asking (scripts, no terminal).' }),
  }

  async run(): Promise<ResolveResult & { outcome?: SubmitOutcome }> {
    const how: Resolution | undefined = this.flags.applied ? 'applied' : this.flags['not-applied'] ? 'not-applied' : this.flags.redispatch ? 'redispatch' : undefined
    if (!how) throw new UsageError('say what happened: --applied, --not-applied or --redispatch')
    const key = operatorKey(this.flags, process.env)
    const interlock = await this.openInterlock()
    const store = interlock.store
    try {
      const id = await resolveEffectId(store, this.args.id)
      const details = await effectDetails(store, id)
      if (!this.jsonEnabled()) for (const line of effectLines(details)) this.log(line)
      const question = how === 'applied' ? 'Record that it happened' : how === 'not-applied' ? 'Record that it did not happen' : 'Send it again now'
      if (!(await confirm(`${question}, signed as operator ${key.name}?`, this.flags.yes))) {
        throw new InterlockError('E_DECLINED', ExitCode.FAILURE, 'not signed: you answered no', { hint: 'Nothing was journaled.' })
      }
      const ctx = { store, operators: interlock.operators, policy: interlock.policy, key, clock: systemClock }
      const r = await resolveEffect(ctx, id, how)
      this.log(`Resolved: effect ${r.effectId} is ${r.state} (signed by ${r.operator}).`)
      if (how !== 'redispatch') return r
      // Sent from this process, so what it journals next is signed with the operator's key.
      const outcome = await redispatch(store, new Map(interlock.targets), r.snapshot, interlock.retry, key)
      this.log(`Sent again: ${outcome.status}.`)
      if (outcome.status === 'ambiguous') process.exitCode = ExitCode.AMBIGUOUS
      else if (outcome.status !== 'committed') process.exitCode = ExitCode.FAILURE
      return { ...r, outcome }
    } finally {
      await interlock.close()
    }
  }
}
