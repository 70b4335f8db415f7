/**
 * The two Slack actions and their arguments, checked once at the edge:
 *
 *   post:   { channel: "C…", text?, blocks?, attachments?, thread_ts?, reply_broadcast?,
 *             unfurl_links?, unfurl_media?, mrkdwn?, username?, icon_emoji?, icon_url? }
 *           (https://docs.slack.dev/reference/methods/chat.postMessage; text, blocks or
 *           attachments required)
 *   delete: { channel: "C…", ts: "1700000000.000100" }
 *           (https://docs.slack.dev/reference/methods/chat.delete; the compensation of a post)
 *
 * Channels are ids, not names: premises are read with conversations.info,
 * which takes ids, and a renamed channel is still the same channel.
 *
 * The effect id rides in the message's metadata
 * (https://docs.slack.dev/messaging/message-metadata), where the app that
 * posted can read it back: the way an operator resolving an AMBIGUOUS post
 * finds out whether it landed.
 */
import type { JsonObject, JsonValue } from '../../canonical-json.js'
import { InputError } from '../../errors.js'

export const POST_ACTION = 'post'
export const DELETE_ACTION = 'delete'
export const METADATA_EVENT = 'interlock_effect'

const CHANNEL = /^[CGD][A-Z0-9]{2,}$/
const TS = /^\d+\.\d+$/
const STRINGS = ['text', 'thread_ts', 'username', 'icon_emoji', 'icon_url']
const BOOLEANS = ['reply_broadcast', 'unfurl_links', 'unfurl_media', 'mrkdwn']
const LISTS = ['blocks', 'attachments']
const POST_KEYS = new Set(['channel', ...STRINGS, ...BOOLEANS, ...LISTS])

export type SlackCall =
  | { action: 'post'; channel: string; fields: JsonObject }
  | { action: 'delete'; channel: string; ts: string }

export function parseSlack(action: string, args: JsonObject): SlackCall {
  if (action === POST_ACTION) return parsePost(args)
  if (action === DELETE_ACTION) return parseDelete(args)
  throw new InputError(`a Slack target's actions are "${POST_ACTION}" and "${DELETE_ACTION}" (got ${JSON.stringify(action)})`)
}

function parsePost(args: JsonObject): SlackCall {
  if ('metadata' in args) {
    throw new InputError('args.metadata is Interlock\'s own on a Slack post: it carries the effect id', {
      hint: 'Put what you need in text or blocks.',
    })
  }
  unknownKeys(args, POST_KEYS, 'post')
  const channel = channelOf(args.channel)
  const fields: JsonObject = {}
  for (const k of STRINGS) if (args[k] !== undefined) fields[k] = string(args[k]!, k)
  for (const k of BOOLEANS) {
    if (args[k] === undefined) continue
    if (typeof args[k] !== 'boolean') throw new InputError(`args.${k} must be true or false`)
    fields[k] = args[k]!
  }
  for (const k of LISTS) {
    if (args[k] === undefined) continue
    if (!Array.isArray(args[k]) || (args[k] as JsonValue[]).length === 0) throw new InputError(`args.${k} must be a non-empty list`)
    fields[k] = args[k]!
  }
  if (fields.text === undefined && fields.blocks === undefined && fields.attachments === undefined) {
    throw new InputError('args.text is required (or blocks or attachments): the message to post')
  }
  if (fields.thread_ts !== undefined && !TS.test(fields.thread_ts as string)) {
    throw new InputError(`args.thread_ts must be a message timestamp such as "1700000000.000100" (got ${JSON.stringify(fields.thread_ts)})`)
  }
  return { action: 'post', channel, fields }
}

function parseDelete(args: JsonObject): SlackCall {
  unknownKeys(args, new Set(['channel', 'ts']), 'delete')
  const channel = channelOf(args.channel)
  if (typeof args.ts !== 'string' || !TS.test(args.ts)) {
    throw new InputError(`args.ts must be the message timestamp such as "1700000000.000100" (got ${JSON.stringify(args.ts ?? null)})`)
  }
  return { action: 'delete', channel, ts: args.ts }
}

/** The chat.postMessage body: the arguments, and the effect id in the metadata. */
export function postBody(call: Extract<SlackCall, { action: 'post' }>, effectId: string): JsonObject {
  return { channel: call.channel, ...call.fields, metadata: { event_type: METADATA_EVENT, event_payload: { interlock_effect_id: effectId } } }
}

function channelOf(v: JsonValue | undefined): string {
  if (typeof v !== 'string' || !CHANNEL.test(v)) {
    throw new InputError(`args.channel must be a Slack channel id such as "C0123456789" (got ${JSON.stringify(v ?? null)})`, {
      hint: 'Use the channel id (channel details → About, or conversations.list), not its name.',
    })
  }
  return v
}

function string(v: JsonValue, k: string): string {
  if (typeof v !== 'string' || v === '') throw new InputError(`args.${k} must be a non-empty string`)
  return v
}

function unknownKeys(args: JsonObject, known: Set<string>, action: string): void {
  const unknown = Object.keys(args).filter((k) => !known.has(k))
  if (unknown.length > 0) {
    throw new InputError(`unknown ${action} argument${unknown.length === 1 ? '' : 's'}: ${unknown.map((k) => `args.${k}`).join(', ')}`, {
      hint: `A ${action} takes ${[...known].join(', ')}.`,
    })
  }
}
