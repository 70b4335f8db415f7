/**
 * Slack messages, tier 3: `POST /api/chat.postMessage` (JSON, Bearer token).
 *
 * Slack has no idempotency key, and search is eventual and unreliable (docs/design.md),
 * so a post that may have landed is never resent: the gate makes one in
 * flight at a crash, or with an unknown outcome, AMBIGUOUS. answers.ts says
 * what each answer means. A post is undone by `chat.delete` with the channel
 * and `ts` from its receipt: `compensation` returns that effect, and `apply`
 * carries it out (https://docs.slack.dev/reference/methods/chat.delete).
 */
import { canonicalJson, type JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault, InputError } from '../../errors.js'
import type { HttpClientOptions } from '../http/client.js'
import { bearerService, type ServiceClient, type ServiceSettings } from '../http/service.js'
import type { ApplyContext, Compensation, EffectTarget, ProbeResult } from '../target.js'
import { slackAnswer } from './answers.js'
import { captureChannel, checkChannel } from './channel-premises.js'
import { DELETE_ACTION, parseSlack, postBody, type SlackCall } from './message-args.js'
import { probeSlack } from './probe.js'

export const SLACK_API = 'https://slack.com'

export interface SlackTargetSettings extends Partial<ServiceSettings> {
  /** A bot token (xoxb-…) with chat:write (and channels:read for premises). */
  token: string
}

export class SlackMessageTarget implements EffectTarget {
  readonly tier = 3 as const
  private readonly api: ServiceClient

  constructor(
    readonly name: string,
    settings: SlackTargetSettings,
    options: HttpClientOptions = {},
  ) {
    this.api = bearerService(name, 'token', settings.token, { ...settings, baseUrl: settings.baseUrl ?? SLACK_API }, options)
  }

  validateArgs(action: string, args: JsonObject): void {
    parseSlack(action, args)
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    const call = parseSlack(action, args)
    return call.action === 'post' ? captureChannel(this.api, call.channel) : {}
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    let call: SlackCall
    try {
      call = parseSlack(effect.action, effect.args)
    } catch (e) {
      // Journaled by a caller that skipped validateArgs: the call can never be made, so say why before anything is sent.
      if (e instanceof InputError) return [e.message]
      throw e
    }
    return call.action === 'post' ? checkChannel(this.api, call.channel, effect.premises) : []
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let call: SlackCall
    try {
      call = parseSlack(effect.action, effect.args)
    } catch (e) {
      throw new DispatchFault('refused', `target ${this.name}: ${(e as Error).message}; nothing was sent`, { cause: e })
    }
    const [method, body] =
      call.action === 'post' ? ['chat.postMessage', postBody(call, effect.id)] : ['chat.delete', { channel: call.channel, ts: call.ts }]
    const url = this.api.url(`/api/${method}`)
    const where = this.api.http.where('POST', url)
    const answer = await this.api.http.send('POST', url, { 'content-type': 'application/json; charset=utf-8' }, canonicalJson(body), ctx)
    const said = slackAnswer(answer, where, this.api.http.now())
    if ('fault' in said) throw said.fault
    const receipt: Receipt = { channel: String(said.body.channel ?? call.channel), ts: String(said.body.ts ?? '') }
    if (call.action === 'delete') receipt.deleted = true
    return receipt
  }

  /** A post is undone by deleting it, where the receipt says it landed (Slack may answer a different channel id than was asked). */
  compensation(effect: Effect, receipt: Receipt): Compensation {
    if (effect.action === DELETE_ACTION) {
      throw new InputError('a deleted Slack message cannot be restored: post it again as a new effect')
    }
    const { channel, ts } = receipt
    if (typeof channel !== 'string' || typeof ts !== 'string' || ts === '') {
      throw new InputError(`effect ${effect.id} has no channel and ts in its receipt: there is no message to delete`)
    }
    return { action: DELETE_ACTION, args: { channel, ts } }
  }

  /** `interlock check`: auth.test, read-only (probe.ts). */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeSlack(this.api, signal)
  }

  async close(): Promise<void> {
    await this.api.http.close()
  }
}
