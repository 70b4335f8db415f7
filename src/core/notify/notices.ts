/**
 * From events to notices: which rule tells which events, grouped per rule
 * and window, and what each notice says on its channel. Everything here is
 * a function of the events alone (never of the time it is computed), so
 * every process that computes the notice for a window computes the same
 * effect, and the gate journals it once.
 *
 * A window [w, w + window) is told once it has passed, plus SETTLE_MS for
 * records stamped inside it and committed a little later; its notice's key
 * is `notify/<rule>/<w>`, and names every event whose time falls in it. A
 * record committed more than SETTLE_MS after the time it carries (a writer
 * whose clock is that far behind) into a window already told is not told
 * again: relays' clocks must agree within it. With `window = "0s"` every
 * event is told on its own, at once, under `notify/<rule>/<event key>`.
 */
import type { JsonObject } from '../canonical-json.js'
import type { EffectInput } from '../effect.js'
import type { NotifyRuleConfig } from '../config/types.js'
import { NOTIFY_THREAD, type NoticeEvent, type NoticeEventKind } from './events.js'

/** How long after a window has passed its notice waits for records stamped inside it and committed since. */
export const SETTLE_MS = 5_000
/** Effects a grouped notice names (the rest are counted). */
export const FIRST_FEW = 5

export type ChannelType = 'slack' | 'sendgrid' | 'webhook'

export function matches(rule: NotifyRuleConfig, e: NoticeEvent): boolean {
  if (!(rule.on as string[]).includes(e.kind)) return false
  if (e.kind === 'ambiguous_waiting' && !e.key.endsWith(`.${rule.waitingMs}`)) return false
  if (rule.targets && !rule.targets.includes(e.effect.target)) return false
  if (rule.rules && (e.rule === undefined || !rule.rules.includes(e.rule))) return false
  if (rule.principals && (e.effect.principal === undefined || !rule.principals.includes(e.effect.principal))) return false
  return true
}

export interface PlannedNotice {
  /** The notice's effect key: names the window (or the event) it tells. */
  key: string
  events: NoticeEvent[]
}

/**
 * The notices a rule owes now: its events grouped by window, each window
 * once it has passed, skipping what `told` (keys of notices journaled)
 * already covers.
 */
export function planNotices(rule: NotifyRuleConfig, events: readonly NoticeEvent[], told: ReadonlySet<string>, now: number): PlannedNotice[] {
  const mine = events.filter((e) => matches(rule, e)).sort((a, b) => a.at - b.at || a.key.localeCompare(b.key))
  if (rule.windowMs === 0) return mine.map((e) => ({ key: `notify/${rule.name}/${e.key}`, events: [e] })).filter((n) => !told.has(n.key))
  const windows = new Map<number, NoticeEvent[]>()
  for (const e of mine) {
    const w = Math.floor(e.at / rule.windowMs) * rule.windowMs
    windows.set(w, [...(windows.get(w) ?? []), e])
  }
  const planned: PlannedNotice[] = []
  for (const [w, inWindow] of windows) {
    const key = `notify/${rule.name}/${w}`
    if (now >= w + rule.windowMs + SETTLE_MS && !told.has(key)) planned.push({ key, events: inWindow })
  }
  return planned
}

/** The effect that tells `n` on the rule's channel. */
export function noticeEffect(rule: NotifyRuleConfig, channelType: ChannelType, n: PlannedNotice, scrub: (t: string) => string): EffectInput {
  const subject = scrub(subjectOf(n.events))
  const text = scrub(textOf(rule, n.events))
  const base = { thread: NOTIFY_THREAD, target: rule.channel, key: n.key }
  switch (channelType) {
    case 'slack':
      return { ...base, action: 'post', args: { channel: rule.slackChannel!, text: `*${subject}*\n${text}` } }
    case 'sendgrid':
      return { ...base, action: 'send', args: { to: rule.to!, from: rule.from!, subject, text } }
    case 'webhook':
      return { ...base, action: 'notice', args: webhookBody(rule, n, subject, text, scrub) }
  }
}

const WORDS: Record<NoticeEventKind, string> = {
  held: 'held for operators',
  release: 'released in part, the quorum not yet complete',
  ambiguous: 'AMBIGUOUS: nobody can know whether it took effect',
  ambiguous_waiting: 'still AMBIGUOUS, waiting for an operator',
  failed: 'FAILED: the service refused it',
  refused: 'refused by a relay, nothing sent',
}

function subjectOf(events: readonly NoticeEvent[]): string {
  const kinds = [...new Set(events.map((e) => e.kind))]
  const targets = [...new Set(events.map((e) => e.effect.target))]
  const what = kinds.map((k) => WORDS[k].split(':')[0]).join(', ')
  return events.length === 1
    ? `Interlock: ${events[0]!.effect.action} on ${events[0]!.effect.target} ${what}`
    : `Interlock: ${events.length} effects on ${targets.join(', ')} ${what}`
}

function textOf(rule: NotifyRuleConfig, events: readonly NoticeEvent[]): string {
  if (events.length === 1) return oneText(rule, events[0]!)
  const first = events.slice(0, FIRST_FEW)
  const kinds = [...new Set(events.map((e) => e.kind))]
  const lines = [
    `${events.length} effects ${kinds.map((k) => WORDS[k]).join('; ')}, between ${iso(events[0]!.at)} and ${iso(events[events.length - 1]!.at)} (notify rule ${rule.name}).`,
    ...counts(events),
    `First ${first.length}:`,
    ...first.map((e) => `- ${e.effect.id} ${e.effect.action} on ${e.effect.target} (thread ${e.effect.thread})`),
    `See them all: ${listCommand(events)}`,
    ...commandsFor(kinds, '<id>'),
  ]
  return lines.join('\n')
}

function oneText(rule: NotifyRuleConfig, e: NoticeEvent): string {
  const lines = [
    `${e.effect.action} on ${e.effect.target}, thread ${e.effect.thread}${e.effect.principal ? `, principal ${e.effect.principal}` : ''}: ${WORDS[e.kind]} (${iso(e.at)}).`,
    `Effect ${e.effect.id} (tier ${e.tier})`,
    `Args: ${argsText(e.effect.args)}`,
  ]
  if (e.rule) lines.push(`Held by rule ${e.rule}${e.reason ? `: ${e.reason}` : ''}`)
  if (e.needed !== undefined && (e.kind === 'held' || e.kind === 'release')) {
    lines.push(`Releases: ${e.releasedBy!.length} of ${e.needed}${e.releasedBy!.length > 0 ? ` (${e.releasedBy!.join(', ')})` : ''}`)
  }
  if (e.detail) lines.push(`Why: ${cut(e.detail, 300)}`)
  lines.push(...commandsFor([e.kind], e.effect.id))
  if (rule.consoleUrl) lines.push(`Console: ${rule.consoleUrl}/effects/${e.effect.id}`)
  return lines.join('\n')
}

function commandsFor(kinds: readonly NoticeEventKind[], id: string): string[] {
  const lines: string[] = []
  if (kinds.includes('held') || kinds.includes('release')) lines.push(`Release: interlock outbox release ${id}`, `Deny: interlock outbox deny ${id} --reason "<why>"`)
  if (kinds.includes('ambiguous') || kinds.includes('ambiguous_waiting')) {
    lines.push(`Resolve: interlock outbox resolve ${id} --applied (it took effect) | --not-applied (it did not; nothing is sent) | --redispatch (it did not; send it again)`)
  }
  if (kinds.includes('refused') || kinds.includes('failed')) lines.push(`Look: interlock outbox show ${id}`)
  return lines
}

function listCommand(events: readonly NoticeEvent[]): string {
  const states = [...new Set(events.map((e) => (e.kind === 'held' || e.kind === 'release' ? 'HELD' : e.kind === 'failed' ? 'FAILED' : e.kind === 'refused' ? undefined : 'AMBIGUOUS')))].filter(Boolean)
  const targets = [...new Set(events.map((e) => e.effect.target))]
  return `interlock outbox list${states.length === 1 ? ` --state ${states[0]}` : ''}${targets.length === 1 ? ` --target ${targets[0]}` : ''}`
}

function counts(events: readonly NoticeEvent[]): string[] {
  const by = new Map<string, number>()
  for (const e of events) {
    const k = `${e.effect.target} ${e.effect.action} ${e.kind}`
    by.set(k, (by.get(k) ?? 0) + 1)
  }
  return [...by].map(([what, n]) => `- ${n} × ${what}`)
}

function webhookBody(rule: NotifyRuleConfig, n: PlannedNotice, subject: string, text: string, scrub: (t: string) => string): JsonObject {
  return {
    type: 'interlock.notice',
    rule: rule.name,
    notice: n.key,
    subject,
    text,
    count: n.events.length,
    // Every event's key, so a receiver can tell which it has been told of.
    covers: n.events.map((e) => e.key),
    effects: n.events.slice(0, 20).map((e) => ({
      id: e.effect.id,
      event: e.kind,
      at: iso(e.at),
      target: e.effect.target,
      action: e.effect.action,
      thread: e.effect.thread,
      tier: e.tier,
      args: scrub(argsText(e.effect.args)),
      ...(e.rule ? { rule: e.rule } : {}),
      ...(e.needed !== undefined ? { releases: e.releasedBy!.length, needed: e.needed } : {}),
      ...(rule.consoleUrl ? { console: `${rule.consoleUrl}/effects/${e.effect.id}` } : {}),
    })),
  }
}

/** The args as JSON, each long string cut, the whole bounded: a notice is a pointer, not a copy. */
export function argsText(args: JsonObject): string {
  const shortened = JSON.stringify(args, (_k, v: unknown) => (typeof v === 'string' ? cut(v, 80) : v))
  return cut(shortened, 400)
}

function cut(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}
