/**
 * The policy family: every [[policy.rules]] entry refers only to targets and
 * actions that exist (a rule naming a missing target holds nothing, so the
 * effects it was meant to hold go out unreviewed), and each quorum is no
 * larger than the number of [[operators]] (a quorum nobody can reach holds
 * effects for ever). Quorum problems come from the loader's own cross-key
 * check (config/policy.ts); this family reports them as its own rows.
 */
import { actionsOf } from './target-actions.js'
import { fail, pass } from './rows.js'
import type { CheckContext, CheckModule, CheckRow } from './types.js'

export const policyCheck: CheckModule = {
  family: 'policy',
  async run(ctx: CheckContext): Promise<CheckRow[]> {
    const { rules } = ctx.config.policy
    const targets = ctx.config.targets
    const refs: CheckRow[] = []
    rules.forEach((rule, i) => {
      const at = `policy.rules[${i}] (${rule.name})`
      const id = `policy.rules.${rule.name}`
      const NAME = 'refers to existing targets and actions'
      if (rule.target !== undefined && !targets[rule.target]) {
        const known = Object.keys(targets).sort()
        refs.push(fail(id, NAME, `${at}.target: there is no target "${rule.target}"${known.length ? ` (targets: ${known.join(', ')})` : ''}`, 'Name a [targets.<name>] that exists, or remove the rule.'))
        return
      }
      if (rule.action !== undefined) {
        const scope = rule.target !== undefined ? [rule.target] : Object.keys(targets)
        const knowing = scope.filter((t) => {
          const actions = actionsOf(targets[t]!.type)
          return actions === null || actions.includes(rule.action!)
        })
        if (knowing.length === 0) {
          const where = rule.target !== undefined ? `target "${rule.target}" (${targets[rule.target]!.type}) knows ${actionsOf(targets[rule.target]!.type)!.join(', ')}` : 'no target knows it'
          refs.push(fail(id, NAME, `${at}.action: "${rule.action}" is not an action: ${where}`, 'Fix the action name, or remove the rule.'))
          return
        }
      }
      refs.push(pass(id, NAME, `${at}: ${rule.target ? `target ${rule.target}` : 'every target'}${rule.action ? `, action ${rule.action}` : ''}`))
    })

    const operators = ctx.config.operators.length
    const quorumProblems = ctx.policyProblems.filter((p) => /\.quorum:/.test(p))
    const other = ctx.policyProblems.filter((p) => !/\.quorum:/.test(p))
    const QUORUM = 'each quorum is no larger than the number of operators'
    const quorum =
      quorumProblems.length > 0
        ? quorumProblems.map((p) => fail('policy.quorum', QUORUM, p, 'Declare more [[operators]], or lower the quorum.'))
        : [pass('policy.quorum', QUORUM, rules.length === 0 ? 'no rules: nothing is held' : `largest quorum ${Math.max(...rules.map((r) => r.quorum))} of ${operators} operator${operators === 1 ? '' : 's'}`)]
    const rest = other.map((p) => fail('policy.rules', 'policy rules are consistent', p, 'Fix the key named.'))
    return [...refs, ...quorum, ...rest]
  },
}
