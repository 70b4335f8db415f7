/**
 * The Slack Web API, as far as the message target relies on it, from Slack's
 * own documentation:
 *
 * - Answers (https://docs.slack.dev/apis/web-api/#responses): HTTP 200 with
 *   `{ "ok": true, ... }` or `{ "ok": false, "error": "<code>" }`, also for bad
 *   tokens (`invalid_auth`, `not_authed`).
 * - chat.postMessage (https://docs.slack.dev/reference/methods/chat.postMessage):
 *   JSON with `Authorization: Bearer`; `channel` and one of `text`, `blocks`,
 *   `attachments`; errors `channel_not_found`, `not_in_channel`, `is_archived`,
 *   `no_text`, `msg_too_long`, `invalid_metadata_format`; answers `channel`
 *   (the id) and `ts`. Metadata `{ event_type, event_payload }`
 *   (https://docs.slack.dev/messaging/message-metadata) is stored with the message.
 * - chat.delete (https://docs.slack.dev/reference/methods/chat.delete):
 *   `channel`, `ts`; `message_not_found`, `channel_not_found`.
 * - conversations.info (https://docs.slack.dev/reference/methods/conversations.info):
 *   `channel` → `{ id, name, is_archived, is_member }`.
 * - Rate limits (https://docs.slack.dev/apis/web-api/rate-limits): HTTP 429
 *   with `Retry-After` in seconds and `{ "ok": false, "error": "ratelimited" }`.
 *
 * The ledger counts posts per `metadata.event_payload.interlock_effect_id`,
 * where the target puts the effect id. Slack itself would post each request
 * again: nothing here deduplicates, which is why the target is tier 3.
 */
import { Emulator, type EmulatorRequest, type EmulatorResponse } from './emulator.js'

export interface SlackChannel {
  id: string
  name: string
  is_archived: boolean
  /** Whether the bot is in the channel (chat.postMessage refuses not_in_channel otherwise). */
  is_member: boolean
}

export interface SlackMessage {
  channel: string
  ts: string
  text?: string
  effectId?: string
  body: Record<string, unknown>
}

const MAX_TEXT = 40_000

export class SlackEmulator extends Emulator {
  readonly channels = new Map<string, SlackChannel>()
  /** Messages still there, by `channel/ts`. */
  readonly messages = new Map<string, SlackMessage>()
  readonly deleted: SlackMessage[] = []
  private rateLimits: { left: number; retryAfter: number } = { left: 0, retryAfter: 1 }
  private errors: { error: string; afterPosting: boolean }[] = []
  private seq = 0

  constructor(readonly token = 'xoxb-emulator-token-for-tests') {
    super()
  }

  seedChannel(channel: Pick<SlackChannel, 'id' | 'name'> & Partial<SlackChannel>): SlackChannel {
    const c: SlackChannel = { is_archived: false, is_member: true, ...channel }
    this.channels.set(c.id, c)
    return c
  }

  /** The next `times` calls are answered HTTP 429 with `Retry-After: retryAfter` seconds. */
  rateLimit(times: number, retryAfter = 1): void {
    this.rateLimits = { left: times, retryAfter }
  }

  /**
   * The next post answers `{ ok: false, error }`, having posted first when
   * `afterPosting` (Slack documents that on internal_error or fatal_error
   * "some aspect of the operation" may have succeeded).
   */
  failNextPost(error: string, afterPosting = false): void {
    this.errors.push({ error, afterPosting })
  }

  postsFor(effectId: string): SlackMessage[] {
    return [...this.messages.values(), ...this.deleted].filter((m) => m.effectId === effectId)
  }

  protected async route(req: EmulatorRequest): Promise<EmulatorResponse> {
    if (this.rateLimits.left > 0) {
      this.rateLimits.left--
      return { status: 429, body: { ok: false, error: 'ratelimited' }, headers: { 'retry-after': String(this.rateLimits.retryAfter) } }
    }
    const auth = req.headers.authorization
    if (!auth) return fail('not_authed')
    if (auth !== `Bearer ${this.token}`) return fail('invalid_auth')
    const method = req.path.replace(/^\/api\//, '')
    if (method === 'conversations.info' && req.method === 'GET') return this.info(req.query.get('channel'))
    if (req.method !== 'POST') return fail('unknown_method')
    let args: Record<string, unknown>
    try {
      args = JSON.parse(req.body) as Record<string, unknown>
    } catch {
      return fail('invalid_json')
    }
    // `interlock check`'s probe, read-only, no scope needed (https://docs.slack.dev/reference/methods/auth.test).
    if (method === 'auth.test') return ok({ url: 'https://emulator.slack.com/', team: 'Emulator', user: 'interlock', team_id: 'T0EMULATOR', user_id: 'U0INTERLOCK', bot_id: 'B0INTERLOCK' })
    if (method === 'chat.postMessage') return this.post(req, args)
    if (method === 'chat.delete') return this.delete(req, args)
    return fail('unknown_method')
  }

  private info(id: string | null): EmulatorResponse {
    const c = id ? this.channels.get(id) : undefined
    return c ? ok({ channel: { ...c } }) : fail('channel_not_found')
  }

  private async post(req: EmulatorRequest, args: Record<string, unknown>): Promise<EmulatorResponse> {
    const c = this.channels.get(String(args.channel))
    if (!c) return fail('channel_not_found')
    if (c.is_archived) return fail('is_archived')
    if (!c.is_member) return fail('not_in_channel')
    if (args.text === undefined && args.blocks === undefined && args.attachments === undefined) return fail('no_text')
    if (typeof args.text === 'string' && args.text.length > MAX_TEXT) return fail('msg_too_long')
    const metadata = args.metadata as { event_type?: unknown; event_payload?: Record<string, unknown> } | undefined
    if (metadata !== undefined && (typeof metadata.event_type !== 'string' || typeof metadata.event_payload !== 'object')) {
      return fail('invalid_metadata_format')
    }
    const effectId = typeof metadata?.event_payload?.interlock_effect_id === 'string' ? metadata.event_payload.interlock_effect_id : undefined
    const failing = this.errors.shift()
    if (failing && !failing.afterPosting) return fail(failing.error)
    return this.apply(req, effectId, () => {
      const n = ++this.seq
      const ts = `${1_700_000_000 + n}.${String(n).padStart(6, '0')}`
      const message: SlackMessage = { channel: c.id, ts, effectId, body: args }
      if (typeof args.text === 'string') message.text = args.text
      this.messages.set(`${c.id}/${ts}`, message)
      if (failing) return fail(failing.error)
      return ok({ channel: c.id, ts, message: { type: 'message', text: args.text ?? '', ts } })
    })
  }

  private async delete(req: EmulatorRequest, args: Record<string, unknown>): Promise<EmulatorResponse> {
    const c = this.channels.get(String(args.channel))
    if (!c) return fail('channel_not_found')
    const key = `${c.id}/${String(args.ts)}`
    const message = this.messages.get(key)
    if (!message) return fail('message_not_found')
    // A delete carries no effect id of its own: it changes the world, but is not counted in the ledger.
    return this.apply(req, undefined, () => {
      this.messages.delete(key)
      this.deleted.push(message)
      return ok({ channel: c.id, ts: message.ts })
    })
  }
}

function ok(rest: Record<string, unknown>): EmulatorResponse {
  return { status: 200, body: { ok: true, ...rest } }
}

function fail(error: string): EmulatorResponse {
  return { status: 200, body: { ok: false, error } }
}
