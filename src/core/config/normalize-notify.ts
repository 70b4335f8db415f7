/**
 * [[notify]] rules as the engine sees them, and what the schema cannot say
 * about them: the channel is a target of a channel type with what that type
 * needs, the targets and rules they name exist.
 */
import { parseDuration } from './policy.js'
import type { NotifyRuleConfig, PolicyConfig, TargetConfig } from './types.js'

/** Target types a notice can go to. */
export const CHANNEL_TYPES = ['slack', 'sendgrid', 'webhook'] as const

type Table = Record<string, unknown>

export function normalizeNotify(raw: unknown): NotifyRuleConfig[] {
  if (!Array.isArray(raw)) return []
  return (raw as Table[]).map((r, i) => {
    const rule: NotifyRuleConfig = {
      name: (r.name as string | undefined) ?? `notify-${i + 1}`,
      on: [...(r.on as NotifyRuleConfig['on'])],
      channel: r.channel as string,
      windowMs: r.window === undefined ? 60_000 : /^0[a-z]+$/.test(r.window as string) ? 0 : parseDuration(r.window as string),
    }
    if (r.targets) rule.targets = [...(r.targets as string[])]
    if (r.rules) rule.rules = [...(r.rules as string[])]
    if (r.principals) rule.principals = [...(r.principals as string[])]
    if (r.waiting) rule.waitingMs = parseDuration(r.waiting as string)
    if (r.slack_channel) rule.slackChannel = r.slack_channel as string
    if (r.to) rule.to = [...(r.to as string[])]
    if (r.from) rule.from = r.from as string
    if (r.console_url) rule.consoleUrl = (r.console_url as string).replace(/\/+$/, '')
    return rule
  })
}

export function notifyProblems(rules: readonly NotifyRuleConfig[], targets: Record<string, TargetConfig>, policy: PolicyConfig): string[] {
  const problems: string[] = []
  const seen = new Set<string>()
  for (const [i, r] of rules.entries()) {
    const at = (key: string) => `notify[${i}].${key}`
    if (seen.has(r.name)) problems.push(`${at('name')}: "${r.name}" names another [[notify]] rule too`)
    seen.add(r.name)
    const channel = targets[r.channel]
    if (!channel) problems.push(`${at('channel')}: no [targets.${r.channel}] in this file`)
    else if (!(CHANNEL_TYPES as readonly string[]).includes(channel.type)) problems.push(`${at('channel')}: [targets.${r.channel}] is of type "${channel.type}"; notices go to a target of type ${CHANNEL_TYPES.map((t) => `"${t}"`).join(', ')}`)
    else if (channel.type === 'slack' && !r.slackChannel) problems.push(`${at('slack_channel')}: required when the channel is a slack target (the Slack channel to post in)`)
    else if (channel.type === 'sendgrid' && (!r.to || !r.from)) problems.push(`${at(r.to ? 'from' : 'to')}: required when the channel is a sendgrid target`)
    if (r.on.includes('ambiguous_waiting') && r.waitingMs === undefined) problems.push(`${at('waiting')}: required with "ambiguous_waiting" (how long an AMBIGUOUS effect waits before it is told again)`)
    for (const [j, t] of (r.targets ?? []).entries()) if (!targets[t]) problems.push(`${at(`targets[${j}]`)}: no [targets.${t}] in this file`)
    for (const [j, name] of (r.rules ?? []).entries()) if (!policy.rules.some((p) => p.name === name)) problems.push(`${at(`rules[${j}]`)}: no [[policy.rules]] named "${name}"`)
  }
  return problems
}
