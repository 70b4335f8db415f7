import { Args, Flags } from '@oclif/core'
import { BaseCommand } from '../../cli/base-command.js'
import { resolveEffectId } from '../../core/outbox/effect-ref.js'
import { effectLines } from '../../cli/effect-view.js'
import { confirm, keyFlags, operatorKey } from '../../cli/operator-key.js'
import { systemClock } from '../../core/clock.js'
import { ExitCode, InterlockError } from '../../core/errors.js'
import { denyEffect, releaseEffect, type DenyResult, type ReleaseResult } from '../../core/outbox/release.js'
import { effectDetails } from '../../core/outbox/show.js'

export default class OutboxRelease extends BaseCommand<typeof OutboxRelease> {
  static override summary = 'Sign the release (or, with --deny, the refusal) of a held effect.'
  static override description = `Shows the effect (target, action, args, premises, amount, the rule that held it, who has signed so far), asks you to confirm on a terminal (--yes otherwise), and signs with your operator key a statement binding the effect id, the digest of its args and premises, your name, an expiry (the rule's release_ttl) and a nonce. When your release completes the rule's quorum of distinct operators, the effect is AUTHORIZED and goes on to dispatch; otherwise it stays HELD with your signature journaled. Your release is journaled before the authorization: if this command is killed between the two, \`interlock reconcile-effects\` authorizes the effect from the journaled quorum. --deny signs a refusal instead: the effect is REJECTED, in the same record that journals it.

Exit codes: 0 signed; 1 you answered no; 2 bad usage (no key, no terminal and no --yes); 3 key file refused (readable by others) or your key is not trusted in interlock.toml; 6 the effect is not HELD; 7 no such effect.`
  static override examples = [
    '<%= config.bin %> <%= command.id %> 3f9a…c2',
    'INTERLOCK_OPERATOR_KEY=~/.interlock/alice.key <%= config.bin %> <%= command.id %> 3f9a…c2 --yes --json',
    '<%= config.bin %> <%= command.id %> 3f9a…c2 --deny --reason "duplicate of ticket 4411" --key alice.operator.key',
  ]
  static override args = { id: Args.string({ required: true, description: 'Effect id (64 hex characters), or a unique prefix of at least 4.' }) }
  static override flags = {
    ...keyFlags,
    yes: Flags.boolean({ char: 'y', description: 'Sign without asking (scripts, no terminal).' }),
    deny: Flags.boolean({ description: 'Sign a refusal: the effect is REJECTED.' }),
    reason: Flags.string({ description: 'Why you deny it (with --deny); journaled and signed.', dependsOn: ['deny'] }),
  }

  async run(): Promise<ReleaseResult | DenyResult> {
    const key = operatorKey(this.flags, process.env)
    const interlock = await this.openInterlock()
    const store = interlock.store
    try {
      const id = await resolveEffectId(store, this.args.id)
      const details = await effectDetails(store, id)
      if (!this.jsonEnabled()) for (const line of effectLines(details)) this.log(line)
      const act = this.flags.deny ? 'Deny' : 'Release'
      if (!(await confirm(`${act} this effect as operator ${key.name}?`, this.flags.yes))) {
        throw new InterlockError('E_DECLINED', ExitCode.FAILURE, 'not signed: you answered no', { hint: 'Nothing was journaled.' })
      }
      const ctx = { store, operators: interlock.operators, policy: interlock.policy, key, clock: systemClock }
      if (this.flags.deny) {
        // Scrubbed before it is signed: the journal keeps no secret, and the signature covers what it keeps.
        const denied = await denyEffect(ctx, id, interlock.scrub(this.flags.reason ?? 'denied by an operator'))
        this.log(`Denied: effect ${denied.effectId} is REJECTED (signed by ${denied.operator}).`)
        return denied
      }
      const r = await releaseEffect(ctx, id)
      this.log(
        r.state === 'AUTHORIZED'
          ? `Released: quorum met (${r.quorum.signers.join(', ')}); effect ${r.effectId} is AUTHORIZED and goes on to dispatch.`
          : `Signed: ${r.quorum.have} of ${r.quorum.need} operators have released effect ${r.effectId}; it stays ${r.state}.`,
      )
      for (const reason of r.reasons) this.log(`  ${reason}`)
      return r
    } finally {
      await interlock.close()
    }
  }
}
