/**
 * The notify family: each [[notify]] rule, what it tells and where, and
 * whether a notice it makes is one its channel takes: a sample notice (an
 * effect held, from the rule's own settings) is built and put to the channel
 * target's argument check, so a sender address SendGrid would refuse or a
 * Slack channel that is no channel fails here, not at the first held effect.
 * The channel itself is probed by the targets family (it is a target).
 */
import { redact } from '../config/redact.js'
import { createTarget } from '../targets/registry.js'
import { noticeEffect, type ChannelType } from '../notify/notices.js'
import type { NoticeEvent } from '../notify/events.js'
import { toEffect } from '../effect.js'
import { fail, pass } from './rows.js'
import type { CheckContext, CheckModule, CheckRow } from './types.js'

export const notifyCheck: CheckModule = {
  family: 'notify',
  async run(ctx: CheckContext): Promise<CheckRow[]> {
    const rows: CheckRow[] = []
    for (const rule of ctx.config.notify) {
      const id = `notify.${rule.name}`
      const NAME = `${rule.on.join(', ')} → ${rule.channel}`
      const settings = ctx.config.targets[rule.channel]
      if (!settings) continue // the loader refuses it first
      const sample: NoticeEvent = {
        kind: 'held',
        key: `${'0'.repeat(64)}.held.1`,
        at: 0,
        effect: toEffect({ thread: 'sample', target: 'sample', action: 'sample', args: {} }),
        tier: 1,
        rule: 'sample',
        releasedBy: [],
        needed: 1,
      }
      const notice = noticeEffect(rule, settings.type as ChannelType, { key: `notify/${rule.name}/sample`, events: [sample] }, (t) => redact(t, ctx.config.secrets))
      try {
        const target = createTarget(rule.channel, settings, { secrets: ctx.config.secrets })
        try {
          target.validateArgs?.(notice.action, notice.args)
        } finally {
          await target.close?.().catch(() => {})
        }
        const where = rule.slackChannel ?? rule.to?.join(', ') ?? (settings.type === 'webhook' ? settings.url : rule.channel)
        rows.push(pass(id, NAME, `${settings.type} ${where}${rule.windowMs > 0 ? `, grouped per ${rule.windowMs / 1000} s` : ', one notice per event'}`))
      } catch (e) {
        rows.push(fail(id, NAME, `a notice this rule makes is refused by ${rule.channel}: ${redact((e as Error).message, ctx.config.secrets)}`, `Fix [[notify]] ${rule.name} (slack_channel, to, from) or [targets.${rule.channel}].`))
      }
    }
    return rows
  },
}
