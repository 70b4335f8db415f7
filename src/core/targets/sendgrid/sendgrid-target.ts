/**
 * SendGrid mail send, tier 3: `POST /v3/mail/send` (JSON, Bearer key); 202
 * means SendGrid accepted the message (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send).
 *
 * SendGrid has no idempotency key and no way to ask "did you take message X?"
 * in time to decide, so a send is never resent once it may have left: the
 * gate makes one in flight at a crash, or with an unknown outcome, AMBIGUOUS.
 * This target only says what happened on the wire:
 * - 2xx: accepted; the receipt keeps SendGrid's X-Message-Id;
 * - 429, and 403 "Too many bad requests. Temporary block": not taken, retry
 *   later, after the wait SendGrid names (faults.ts);
 * - other 4xx (400 bad request, 401 bad key, 403 unverified sender, 413): refused,
 *   with SendGrid's `errors[0].message`;
 * - 5xx, reset, timeout: unknown; connection refused: not sent (http/faults.ts).
 */
import { canonicalJson, type JsonObject } from '../../canonical-json.js'
import type { Effect, Premises, Receipt } from '../../effect.js'
import { DispatchFault, InputError } from '../../errors.js'
import type { HttpClientOptions } from '../http/client.js'
import { bearerService, type ServiceClient, type ServiceSettings } from '../http/service.js'
import { probeSendgrid } from './probe.js'
import type { ApplyContext, EffectTarget, ProbeResult } from '../target.js'
import { mailBody, parseMail, recipients } from './mail-args.js'
import { sendgridFault } from './faults.js'
import { captureSuppressions, checkSuppressions } from './suppressions.js'

export const SENDGRID_API = 'https://api.sendgrid.com'

export interface SendgridTargetSettings extends Partial<ServiceSettings> {
  /** An API key with the mail.send scope (and suppressions.read for premises). */
  apiKey: string
}

export class SendgridMailTarget implements EffectTarget {
  readonly tier = 3 as const
  readonly notCompensable = 'a sent email cannot be recalled: SendGrid hands it to the recipients\' mail servers at once'
  private readonly api: ServiceClient

  constructor(
    readonly name: string,
    settings: SendgridTargetSettings,
    options: HttpClientOptions = {},
  ) {
    this.api = bearerService(name, 'api_key', settings.apiKey, { ...settings, baseUrl: settings.baseUrl ?? SENDGRID_API }, options)
  }

  validateArgs(action: string, args: JsonObject): void {
    parseMail(action, args)
  }

  async capture(action: string, args: JsonObject): Promise<Premises> {
    return captureSuppressions(this.api, recipients(parseMail(action, args)))
  }

  async validatePremises(effect: Effect): Promise<string[]> {
    let mail
    try {
      mail = parseMail(effect.action, effect.args)
    } catch (e) {
      // Journaled by a caller that skipped validateArgs: the mail can never be sent, so say why before anything is.
      if (e instanceof InputError) return [e.message]
      throw e
    }
    return checkSuppressions(this.api, recipients(mail), effect.premises)
  }

  async apply(effect: Effect, ctx: ApplyContext): Promise<Receipt> {
    let mail
    try {
      mail = parseMail(effect.action, effect.args)
    } catch (e) {
      throw new DispatchFault('refused', `target ${this.name}: ${(e as Error).message}; nothing was sent`, { cause: e })
    }
    const url = this.api.url('/v3/mail/send')
    const answer = await this.api.http.send('POST', url, { 'content-type': 'application/json' }, canonicalJson(mailBody(mail, effect.id)), ctx)
    const fault = sendgridFault(answer, this.api.http.where('POST', url), this.api.http.now())
    if (fault) throw fault
    return { status: answer.status, message_id: answer.headers['x-message-id'] ?? null, recipients: recipients(mail).length }
  }

  /** `interlock check`: GET /v3/scopes, read-only (probe.ts). */
  probe(signal?: AbortSignal): Promise<ProbeResult> {
    return probeSendgrid(this.api, signal)
  }

  async close(): Promise<void> {
    await this.api.http.close()
  }
}
