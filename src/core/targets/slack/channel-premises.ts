/**
 * What a post rests on: the channel it goes to, as the agent saw it.
 *
 *   { "channel": { "id", "name", "is_archived" } }
 *
 * Read with `conversations.info` (https://docs.slack.dev/reference/methods/conversations.info).
 * Before dispatch it is read again: a channel that is gone, or was archived
 * since the decision, is a violation (Slack would refuse the post anyway, but
 * a REJECTED effect says why in the agent's terms). A rename is not: the
 * channel is the same. A delete rests on nothing.
 */
import type { JsonObject } from '../../canonical-json.js'
import type { Premises } from '../../effect.js'
import { InputError, TargetError } from '../../errors.js'
import type { HttpAnswer } from '../http/client.js'
import type { ServiceClient } from '../http/service.js'

export interface Channel {
  id: string
  name: string
  is_archived: boolean
}

export async function captureChannel(api: ServiceClient, id: string): Promise<Premises> {
  const channel = await channelNow(api, id)
  if (!channel) throw new InputError(`args.channel: Slack has no channel ${id} that this token can see`)
  return { channel: { ...channel } }
}

export async function checkChannel(api: ServiceClient, id: string, premises: Premises): Promise<string[]> {
  const was = premises.channel as JsonObject | undefined
  if (was === undefined) return []
  if (was === null || typeof was !== 'object' || Array.isArray(was) || was.id !== id) {
    return [`premises.channel must describe channel ${id} as capture wrote it`]
  }
  const now = await channelNow(api, id)
  if (!now) return [`channel ${id} (#${String(was.name)}) is gone`]
  if (now.is_archived && was.is_archived !== true) return [`channel ${id} (#${now.name}) was archived since the decision`]
  return []
}

/** The channel, or null when Slack says there is none; any other failure means "cannot check now". */
async function channelNow(api: ServiceClient, id: string): Promise<Channel | null> {
  const url = api.url(`/api/conversations.info?channel=${encodeURIComponent(id)}`)
  const where = api.http.where('GET', url)
  let answer: HttpAnswer
  try {
    answer = await api.http.send('GET', url)
  } catch (e) {
    throw new TargetError(`${where}: cannot read channel ${id}: ${(e as Error).message}`, { cause: e })
  }
  const body = answer.body as JsonObject | null
  if (answer.status === 200 && body?.ok === false && body.error === 'channel_not_found') return null
  const c = body?.channel as JsonObject | undefined
  if (answer.status !== 200 || body?.ok !== true || !c || typeof c.id !== 'string') {
    const said = typeof body?.error === 'string' ? body.error : `HTTP ${answer.status}`
    throw new TargetError(`${where}: cannot read channel ${id} (${said}); the premises cannot be checked now`)
  }
  return { id: c.id, name: String(c.name ?? ''), is_archived: c.is_archived === true }
}
