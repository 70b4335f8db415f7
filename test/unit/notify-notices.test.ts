/**
 * Notices from events, without a store: which rule tells which event, how a
 * window groups them and when it is told, what each channel is sent, and
 * that a notice is a function of its events alone (the same effect id in
 * every process that computes it).
 */
import { describe, expect, it } from 'vitest'
import type { NotifyRuleConfig } from '../../src/core/config/types.js'
import { toEffect } from '../../src/core/effect.js'
import type { NoticeEvent } from '../../src/core/notify/events.js'
import { argsText, matches, noticeEffect, planNotices, SETTLE_MS } from '../../src/core/notify/notices.js'

const SECRET = 'sk_live_notify_unit_secret_42'
const scrub = (t: string) => t.split(SECRET).join('***')

function event(i: number, more: Partial<NoticeEvent> = {}): NoticeEvent {
  const effect = toEffect({ thread: `run-${i}`, target: 'payments', action: 'refund', args: { charge: `ch_${i}`, amount: '2500.00', note: 'x'.repeat(300), token: SECRET }, principal: i % 2 ? 'user:alice' : 'token:ci-bot' })
  return { kind: 'ambiguous', key: `${effect.id}.ambiguous.3`, at: 1_000_000 + i * 100, effect, tier: 3, detail: 'the connection was reset after the request was written', ...more }
}

const rule = (more: Partial<NotifyRuleConfig> = {}): NotifyRuleConfig => ({ name: 'ops', on: ['ambiguous'], channel: 'hooks', windowMs: 60_000, ...more })

describe('which rule tells which event', () => {
  it('by kind, target, holding rule and principal', () => {
    expect(matches(rule(), event(1))).toBe(true)
    expect(matches(rule({ on: ['failed'] }), event(1))).toBe(false)
    expect(matches(rule({ targets: ['mail'] }), event(1))).toBe(false)
    expect(matches(rule({ principals: ['user:alice'] }), event(1))).toBe(true)
    expect(matches(rule({ principals: ['user:alice'] }), event(2))).toBe(false)
    expect(matches(rule({ on: ['held'], rules: ['big-refunds'] }), event(1, { kind: 'held', rule: 'big-refunds' }))).toBe(true)
    expect(matches(rule({ on: ['held'], rules: ['big-refunds'] }), event(1, { kind: 'held', rule: 'other' }))).toBe(false)
  })

  it('ambiguous_waiting: only the wait the rule asks for', () => {
    const e = event(1, { kind: 'ambiguous_waiting', key: `${'a'.repeat(64)}.ambiguous_waiting.3.3600000` })
    expect(matches(rule({ on: ['ambiguous_waiting'], waitingMs: 3_600_000 }), e)).toBe(true)
    expect(matches(rule({ on: ['ambiguous_waiting'], waitingMs: 60_000 }), e)).toBe(false)
  })
})

describe('windows', () => {
  const events = Array.from({ length: 500 }, (_, i) => event(i))

  it('a storm in one window is one notice, told once the window and the settling time have passed', () => {
    const r = rule({ windowMs: 60_000 })
    const windowEnd = 960_000 + 60_000
    expect(planNotices(r, events.slice(0, 400), new Set(), windowEnd + SETTLE_MS - 1)).toEqual([])
    const [notice, ...more] = planNotices(r, events.slice(0, 400), new Set(), windowEnd + SETTLE_MS)
    // The window [960 s, 1020 s) holds the first 200 events; the next window has not passed yet.
    expect(more).toEqual([])
    expect(notice!.key).toBe('notify/ops/960000')
    expect(notice!.events).toHaveLength(200)
  })

  it('events across windows: one notice per window; a window told already is not told again', () => {
    const r = rule({ windowMs: 10_000 })
    const planned = planNotices(r, events, new Set(), 10_000_000)
    expect(planned.map((p) => p.key)).toEqual(['notify/ops/1000000', 'notify/ops/1010000', 'notify/ops/1020000', 'notify/ops/1030000', 'notify/ops/1040000'])
    expect(planned.reduce((n, p) => n + p.events.length, 0)).toBe(500)
    expect(planNotices(r, events, new Set(planned.map((p) => p.key)), 10_000_000)).toEqual([])
  })

  it('window "0s": one notice per event, at once', () => {
    const planned = planNotices(rule({ windowMs: 0 }), events.slice(0, 3), new Set(), 0)
    expect(planned.map((p) => p.key)).toEqual(events.slice(0, 3).map((e) => `notify/ops/${e.key}`))
  })
})

describe('what each channel is sent', () => {
  const one = { key: 'notify/ops/x', events: [event(1, { kind: 'held', rule: 'big-refunds', reason: 'amount above 1000', releasedBy: ['alice'], needed: 2 })] }

  it('Slack: a post to the rule\'s channel; email: a mail from and to the rule\'s addresses; webhook: JSON naming every event it covers', () => {
    const slack = noticeEffect(rule({ on: ['held'], slackChannel: 'C0OPS' }), 'slack', one, scrub)
    expect(slack).toMatchObject({ thread: 'interlock/notify', target: 'hooks', action: 'post', key: 'notify/ops/x', args: { channel: 'C0OPS' } })
    const text = String(slack.args.text)
    expect(text).toContain('Held by rule big-refunds: amount above 1000')
    expect(text).toContain('Releases: 1 of 2 (alice)')
    expect(text).toContain(`Release: interlock outbox release ${one.events[0]!.effect.id}`)
    expect(text).toContain('Deny: interlock outbox deny')

    const mail = noticeEffect(rule({ on: ['held'], to: ['ops@shop.example'], from: 'interlock@shop.example' }), 'sendgrid', one, scrub)
    expect(mail).toMatchObject({ action: 'send', args: { to: ['ops@shop.example'], from: 'interlock@shop.example', subject: 'Interlock: refund on payments held for operators' } })

    const storm = { key: 'notify/ops/960000', events: Array.from({ length: 40 }, (_, i) => event(i)) }
    const hook = noticeEffect(rule(), 'webhook', storm, scrub)
    expect(hook.args).toMatchObject({ type: 'interlock.notice', rule: 'ops', notice: 'notify/ops/960000', count: 40 })
    expect(hook.args.covers).toEqual(storm.events.map((e) => e.key))
    expect(hook.args.effects).toHaveLength(20)
    expect(String(hook.args.text)).toContain('40 effects AMBIGUOUS')
    expect(String(hook.args.text)).toContain('First 5:')
    expect(String(hook.args.text)).toContain('Resolve: interlock outbox resolve <id> --applied')
  })

  it('args are scrubbed of secrets and cut short; the same events make the same notice', () => {
    const n = noticeEffect(rule({ on: ['held'], slackChannel: 'C0OPS' }), 'slack', one, scrub)
    expect(JSON.stringify(n)).not.toContain(SECRET)
    expect(argsText(one.events[0]!.effect.args).length).toBeLessThanOrEqual(400)
    expect(argsText({ note: 'y'.repeat(300) })).toContain('…')
    expect(toEffect(noticeEffect(rule({ on: ['held'], slackChannel: 'C0OPS' }), 'slack', one, scrub)).id).toBe(toEffect(n).id)
  })
})
