/**
 * One pass of notifying: read the events from the store (events.ts), plan
 * the notices each [[notify]] rule owes (notices.ts), and hand each to
 * `propose`, which journals it as an effect in the notifications thread (a
 * relay proposes it to the outbox and sends it like any effect;
 * reconcile-effects submits it through its gate). Its effect id is a
 * function of the events alone, so a pass repeated after a crash, or run by
 * two relays at once, journals each notice once; whether it reaches the
 * channel once is then the channel's tier: a webhook (tier 1, its
 * Idempotency-Key) is sent again until it has; Slack and email (tier 3) are
 * AMBIGUOUS after a crash in flight, for an operator.
 *
 * A notice that cannot be proposed (a channel refusing its args, the store
 * down) is logged and counted, never thrown: notifying must not stop the
 * dispatch of the effects themselves.
 */
import type { EffectInput } from '../effect.js'
import type { InterlockConfig } from '../config/types.js'
import { redact } from '../config/redact.js'
import type { Store } from '../stores/store.js'
import { findEvents, NOTIFY_THREAD, type NoticeEvent, type NoticeEventKind } from './events.js'
import { noticeEffect, planNotices, type ChannelType } from './notices.js'

/** A notice that keeps failing is logged again after this long (it is counted every time). */
const RELOG_MS = 10 * 60_000

export interface NotifierOptions {
  store: Store
  config: Pick<InterlockConfig, 'notify' | 'policy' | 'targets' | 'secrets'>
  propose(input: EffectInput): Promise<unknown>
  now?: () => number
  log?: (line: string) => void
  /** Events older than this are not told (default 24 hours): a notifier started late does not tell a day of history. */
  horizonMs?: number
  /** Most effects read per state per pass (default 10,000). */
  limit?: number
}

export interface NotifyPassResult {
  /** Notices journaled by this pass. */
  proposed: number
  /** Notices that could not be (logged), and passes that failed. */
  errors: number
}

export class Notifier {
  private readonly now: () => number
  /** What each HELD effect's journal told the last pass (events.ts): read again only when it moved on. */
  private readonly heldSeen = new Map<string, { seq: number; events: NoticeEvent[] }>()
  /** When each failing notice was last logged: a pass every few seconds must not repeat the same line each time. */
  private readonly logged = new Map<string, number>()

  constructor(private readonly o: NotifierOptions) {
    this.now = o.now ?? Date.now
  }

  async pass(): Promise<NotifyPassResult> {
    const result = { proposed: 0, errors: 0 }
    const rules = this.o.config.notify
    if (rules.length === 0) return result
    const now = this.now()
    const since = now - (this.o.horizonMs ?? 86_400_000)
    try {
      const kinds = new Set<NoticeEventKind>(rules.flatMap((r) => r.on))
      const waits = [...new Set(rules.flatMap((r) => (r.waitingMs === undefined ? [] : [r.waitingMs])))]
      const events = await findEvents({ store: this.o.store, policy: this.o.config.policy, since, now, waits, kinds, limit: this.o.limit ?? 10_000, heldSeen: this.heldSeen })
      // Every notice of a window with events since the horizon was journaled after it: list those.
      const told = new Set((await this.o.store.list({ thread: NOTIFY_THREAD, since: new Date(since).toISOString(), limit: 1_000_000 })).map((s) => s.effect.key ?? ''))
      const scrub = (t: string) => redact(t, this.o.config.secrets)
      for (const rule of rules) {
        const type = this.o.config.targets[rule.channel]?.type as ChannelType
        for (const planned of planNotices(rule, events, told, now)) {
          try {
            await this.o.propose(noticeEffect(rule, type, planned, scrub))
            told.add(planned.key)
            result.proposed++
          } catch (e) {
            result.errors++
            const last = this.logged.get(planned.key)
            if (last === undefined || now - last >= RELOG_MS) {
              this.logged.set(planned.key, now)
              this.o.log?.(scrub(`notify ${rule.name}: could not journal the notice ${planned.key} for ${rule.channel}: ${(e as Error).message}`))
            }
          }
        }
      }
    } catch (e) {
      result.errors++
      this.o.log?.(`notify: the pass failed: ${redact((e as Error).message, this.o.config.secrets)}; the next one reads again`)
    }
    return result
  }
}
